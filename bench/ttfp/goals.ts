/**
 * Async/sync ratios per concurrency and the goals. Goals are reported, never asserted: a speed goal
 * lives in a benchmark, not in a test.
 */
import type { LimitResult } from '../limit/runLimit.ts';
import type { Goal, Ratio, RunRow } from './results.ts';

export const GOALS = {
  ttfpAsyncOverSyncAtC1: 0.05,
  ttfpAsyncOverSyncAtC10: 0.1,
  ttfpOverLimitAtC1: 1.15,
  underrunsAtC10: 0,
} as const;

function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

export function asyncSyncRatios(runs: readonly RunRow[]): Ratio[] {
  const out: Ratio[] = [];
  for (const a of runs.filter((r) => r.async_chunk)) {
    const s = runs.find((r) => !r.async_chunk && r.concurrency === a.concurrency);
    if (!s) continue;
    out.push({
      concurrency: a.concurrency,
      ttfp_async_over_sync: ratio(a.mean_ttfp_ms, s.mean_ttfp_ms),
      p50_ttfp_async_over_sync: ratio(a.p50_ttfp_ms, s.p50_ttfp_ms),
      ttft_async_over_sync: ratio(a.mean_ttft_ms, s.mean_ttft_ms),
      e2e_async_over_sync: ratio(a.mean_e2e_ms, s.mean_e2e_ms),
      rtf_async_over_sync: ratio(a.mean_rtf, s.mean_rtf),
    });
  }
  return out;
}

/** The goals that the measured data can speak to (a goal without its data is left out, not failed). */
export function evaluateGoals(runs: readonly RunRow[], ratios: readonly Ratio[], limit: LimitResult | null): Goal[] {
  const goals: Goal[] = [];
  const atC = (c: number) => ratios.find((r) => r.concurrency === c)?.ttfp_async_over_sync ?? null;
  const c1 = atC(1);
  if (c1 !== null)
    goals.push({
      name: 'TTFP async/sync at c=1',
      value: c1,
      target: `<= ${GOALS.ttfpAsyncOverSyncAtC1}`,
      met: c1 <= GOALS.ttfpAsyncOverSyncAtC1,
    });
  const c10 = atC(10);
  if (c10 !== null)
    goals.push({
      name: 'TTFP async/sync at c=10',
      value: c10,
      target: `<= ${GOALS.ttfpAsyncOverSyncAtC10}`,
      met: c10 <= GOALS.ttfpAsyncOverSyncAtC10,
    });
  const asyncC1 = runs.find((r) => r.async_chunk && r.concurrency === 1);
  if (limit && asyncC1?.mean_ttfp_ms != null) {
    const v = asyncC1.mean_ttfp_ms / limit.median.total_ms;
    goals.push({
      name: 'TTFP/limit at c=1 (mean)',
      value: v,
      target: `<= ${GOALS.ttfpOverLimitAtC1}`,
      met: v <= GOALS.ttfpOverLimitAtC1,
    });
  }
  const asyncC10 = runs.find((r) => r.async_chunk && r.concurrency === 10);
  if (asyncC10) {
    goals.push({
      name: 'underruns at c=10',
      value: asyncC10.underruns,
      target: `= ${GOALS.underrunsAtC10}`,
      met: asyncC10.underruns <= GOALS.underrunsAtC10,
    });
  }
  return goals;
}

/** TTFP over the limit for every async run (the bench prints it per concurrency; the goal is at c=1). */
export function ttfpOverLimit(run: RunRow, limit: LimitResult | null): { mean: number; p50: number } | null {
  if (!limit || run.mean_ttfp_ms === null || run.p50_ttfp_ms === null) return null;
  return { mean: run.mean_ttfp_ms / limit.median.total_ms, p50: run.p50_ttfp_ms / limit.median.total_ms };
}
