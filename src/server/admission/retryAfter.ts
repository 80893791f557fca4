/**
 * Retry-After for a 503, from when the pipeline should be whole again. A stage that died is restarted in about as
 * long as its last start took (StageHealth.readyInMs): a fixed 10 s told clients to wait 10 s for a 2 s outage.
 */
import type { StageHealth } from '../../common/engine.ts';

/**
 * Milliseconds until every stage has a ready instance: 0 when all have one now; null when a stage has none and no
 * estimate (first start, or failed for good): the caller falls back to its own figure.
 */
export function recoveryMs(health: readonly StageHealth[]): number | null {
  const soonestByStage = new Map<string, number | null>();
  for (const h of health) {
    const wait = h.status === 'ready' ? 0 : (h.readyInMs ?? null);
    const soonest = soonestByStage.get(h.stageId);
    // The stage is back as soon as any one of its instances is.
    soonestByStage.set(h.stageId, soonest == null ? wait : wait === null ? soonest : Math.min(soonest, wait));
  }
  let worst = 0;
  for (const wait of soonestByStage.values()) {
    if (wait === null) return null;
    worst = Math.max(worst, wait);
  }
  return worst;
}

/** Whole seconds (>= 1, as the header counts) until recovery, or `fallbackSeconds` when unknown. */
export function retryAfterSeconds(health: readonly StageHealth[], fallbackSeconds: number): number {
  const ms = recoveryMs(health);
  return ms === null ? fallbackSeconds : Math.max(1, Math.ceil(ms / 1000));
}
