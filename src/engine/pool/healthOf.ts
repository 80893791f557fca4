/** What /health says of the pool's instances, and of the remote instances a stage still lacks. */
import type { StageHealth } from '../../common/engine.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { StageInstance } from './StageInstance.ts';

/**
 * A (re)starting instance's expected wait: its last start's length (less the models it built: StagePool #boot) less
 * the time this one has run (>= 0).
 */
function readyIn(s: StageInstance): { readyInMs?: number } {
  if ((s.status !== 'starting' && s.status !== 'restarting') || s.lastBootMs === null) return {};
  return { readyInMs: Math.max(0, Math.round(s.lastBootMs - (performance.now() - s.bootStartedAtMs))) };
}

/** Every instance, then one `waiting` entry per remote instance a stage still lacks (min_replicas: not ready). */
export function healthOf(graph: StageGraph, instances: readonly StageInstance[]): StageHealth[] {
  const out: StageHealth[] = instances.map((s) => ({
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
    const joined = instances.filter((s) => s.spec === spec && s.remote).length;
    for (let i = joined; i < spec.minReplicas; i++)
      out.push({ stageId: spec.stageId, replica: i, status: 'waiting', pid: null, restarts: 0, inFlight: 0 });
  }
  return out;
}
