/**
 * One stage instance as the pool tracks it: a local replica (a supervised process it restarts) or a remote instance
 * that joined over Redis (lost or gone, never restarted). The record is the pool's alone to change; everyone else
 * reads it as an InstanceView (routing, the admission plan, /health).
 */
import type { StageHealth } from '../../common/engine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { StageGraph, StageSpec } from '../../common/graph.ts';
import type { StageStats } from '../../worker/messages.ts';
import type { CpuSample } from './HangWatch.ts';
import type { RemoteStageHandle } from '../../control/ControlPlane.ts';
import type { StageWorkerHandle } from '../stageWorkers.ts';

export interface StageInstance {
  readonly spec: StageSpec;
  readonly stageIndex: number;
  readonly replica: number;
  readonly instance: string;
  worker: StageWorkerHandle | null;
  status: StageHealth['status'];
  restarts: number;
  /** Requests sent an `add` and not yet reported `finished` (a request may end before its stages let go of it). */
  readonly inFlight: Set<string>;
  stats: StageStats | null;
  /** When main last heard from this instance, and its CPU samples (HangWatch.ts). */
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

/** What the rest of the engine reads of an instance: the pool's record, read-only. */
export interface InstanceView {
  readonly spec: StageSpec;
  readonly replica: number;
  readonly instance: string;
  readonly status: StageHealth['status'];
  readonly inFlight: ReadonlySet<string>;
  readonly stats: StageStats | null;
  readonly worker: Pick<StageWorkerHandle, 'settings' | 'pid'> | null;
  /** A remote instance's handle (its heartbeats' host); null or absent: main's own process. */
  readonly remote?: { readonly host: string } | null;
}

export function newInstance(
  graph: StageGraph,
  stageIndex: number,
  replica: number,
  instance: string,
  remote: RemoteStageHandle | null = null,
): StageInstance {
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
export function leastLoaded<T extends InstanceView>(instances: Iterable<T>, spec: StageSpec): T {
  let best: T | null = null;
  for (const view of instances) {
    if (view.spec !== spec || view.status !== 'ready') continue;
    if (!best || view.inFlight.size < best.inFlight.size) best = view;
  }
  if (!best)
    throw new ChorusError(
      ErrorCodes.OVERLOADED,
      `no ready replica of stage ${spec.stageId} (restarting or failed); retry shortly`,
    );
  return best;
}
