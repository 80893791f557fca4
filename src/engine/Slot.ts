/**
 * One stage instance as the Orchestrator tracks it: a local replica (a supervised process it restarts) or a remote
 * instance that joined over Redis (lost or gone, never restarted); and what /health says of the whole set.
 */
import type { StageHealth } from '../common/engine.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { StageGraph, StageSpec } from '../common/graph.ts';
import type { StageStats } from '../worker/messages.ts';
import type { CpuSample } from './HangWatch.ts';
import type { RemoteStageHandle } from './RemoteStages.ts';
import type { StageWorkerHandle } from './stageWorkers.ts';

export interface Slot {
  readonly spec: StageSpec;
  readonly stageIndex: number;
  readonly replica: number;
  readonly instance: string;
  worker: StageWorkerHandle | null;
  status: StageHealth['status'];
  restarts: number;
  readonly inFlight: Set<string>;
  stats: StageStats | null;
  /** When main last heard from this instance, and its CPU samples (src/engine/HangWatch.ts). */
  lastHeardMs: number;
  cpuSamples: CpuSample[];
  cpuTicksWhenHeard: number | null;
  /** Requests failed when it was declared hung: its next process is told to drop their chunks. */
  hungOrphans: string[];
  /** An instance on another machine that joined over Redis (no restart: it is lost, or it leaves). */
  readonly remote: RemoteStageHandle | null;
  /** When its current (re)start began (performance.now()), and how long its last one took: /health's readyInMs. */
  bootStartedAtMs: number;
  lastBootMs: number | null;
}

export function newSlot(
  graph: StageGraph,
  stageIndex: number,
  replica: number,
  instance: string,
  remote: RemoteStageHandle | null = null,
): Slot {
  return {
    spec: graph.stages[stageIndex],
    stageIndex,
    replica,
    instance,
    worker: remote,
    status: remote ? 'ready' : 'starting',
    restarts: 0,
    inFlight: new Set(),
    stats: null,
    lastHeardMs: Date.now(),
    cpuSamples: [],
    cpuTicksWhenHeard: null,
    hungOrphans: [],
    remote,
    bootStartedAtMs: performance.now(),
    lastBootMs: null,
  };
}

/** The ready instance of `spec` with the fewest requests in flight; OVERLOADED when none is ready. */
export function leastLoaded(slots: Iterable<Slot>, spec: StageSpec): Slot {
  let best: Slot | null = null;
  for (const slot of slots) {
    if (slot.spec !== spec || slot.status !== 'ready') continue;
    if (!best || slot.inFlight.size < best.inFlight.size) best = slot;
  }
  if (!best)
    throw new ChorusError(
      ErrorCodes.OVERLOADED,
      `no ready replica of stage ${spec.stageId} (restarting or failed); retry shortly`,
    );
  return best;
}

/** Whether the request's chosen Code2Wav instance said (READY facts) that it keeps each request's vocoder state. */
export function statefulVocoder(chosen: Iterable<Slot>): boolean {
  for (const slot of chosen) {
    if (slot.spec.kind !== 'code2wav') continue;
    const facts = slot.worker?.settings?.facts;
    return facts?.kind === 'code2wav' && facts.stateful === true;
  }
  return false;
}

/** A (re)starting instance's expected wait: its last start's length less the time this one has run (>= 0). */
function readyIn(s: Slot): { readyInMs?: number } {
  if ((s.status !== 'starting' && s.status !== 'restarting') || s.lastBootMs === null) return {};
  return { readyInMs: Math.max(0, Math.round(s.lastBootMs - (performance.now() - s.bootStartedAtMs))) };
}

/** Every instance, then one `waiting` entry per remote instance a stage still lacks (min_replicas: not ready). */
export function healthOf(graph: StageGraph, slots: readonly Slot[]): StageHealth[] {
  const instances: StageHealth[] = slots.map((s) => ({
    stageId: s.spec.stageId,
    replica: s.replica,
    status: s.status,
    pid: s.worker?.pid ?? null,
    restarts: s.restarts,
    inFlight: s.inFlight.size,
    instance: s.instance,
    ...(s.remote ? { host: s.remote.host, lastHeartbeatMs: s.remote.lastHeartbeatMs } : {}),
    ...readyIn(s),
  }));
  for (const spec of graph.stages) {
    const joined = slots.filter((s) => s.spec === spec && s.remote).length;
    for (let i = joined; i < spec.minReplicas; i++)
      instances.push({ stageId: spec.stageId, replica: i, status: 'waiting', pid: null, restarts: 0, inFlight: 0 });
  }
  return instances;
}
