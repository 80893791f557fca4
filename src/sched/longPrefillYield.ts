/**
 * Long prefills yield (ArSchedulerOptions.longPrefillsYield, the Thinker's). Pure: ArScheduler.ts asks, per step,
 * how many positions each running request may compute.
 *
 * While a newcomer whose whole prompt fits a step waits for its first output, a running request whose prompt does
 * not fit one (a chunked prefill: a clip's ~850 positions against a step of 600 and a text's ~50) computes at most a
 * seat's share of the step (budget / seats), so the newcomers' first tokens and the decodes that free their seats
 * never wait behind a step of the clip's whole budget. The clip keeps going a share a step and takes the whole budget
 * again once nobody waits: vLLM's long_prefill_token_threshold, only while short prompts wait (seed 000's burst: a
 * clip's 600-position step landing among 31 texts' prefills held back every text not yet prefilled; bench/NOTES.md).
 * A prompt that fits a step (a text admitted with part of its prompt when the budget ran out) never yields: it is one
 * of the short ones.
 */
import type { ArStatus } from './arPlan.ts';

/** What the rule reads of a scheduler's request. */
export interface YieldView {
  readonly requestId: string;
  readonly status: ArStatus;
  readonly paused: boolean;
  readonly sampleAtEnd: boolean;
  readonly numAvailableTokens: number;
  readonly numComputedTokens: number;
}

/** A seat's share of a step (positions), or null when long prefills do not yield. */
export function yieldShareOf(enabled: boolean, budget: number, seats: number): number | null {
  return enabled ? Math.ceil(budget / seats) : null;
}

/**
 * What a running request with `pending` positions to compute may take this step: `share` when its prompt is longer
 * than a step (`budget`) and a newcomer (not paused or deferred) waits with a whole prompt that fits a step and
 * samples at its end; else no cap.
 */
export function longPrefillCapOf(
  ordered: readonly YieldView[],
  deferred: ReadonlySet<string>,
  share: number | null,
  budget: number,
): (r: YieldView, pending: number) => number {
  const shortWaiting = (r: YieldView) => {
    const pending = r.numAvailableTokens - r.numComputedTokens;
    if (r.status !== 'waiting' || r.paused || deferred.has(r.requestId) || !r.sampleAtEnd) return false;
    return pending > 0 && pending <= budget;
  };
  if (share === null || !ordered.some(shortWaiting)) return () => Number.POSITIVE_INFINITY;
  return (r, pending) => (r.numAvailableTokens > budget && pending > share ? share : Number.POSITIVE_INFINITY);
}
