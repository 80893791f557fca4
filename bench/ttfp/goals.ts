/**
 * Ratios between two variants of the same runs (async/sync, or --config over --compare-config) per concurrency,
 * and the goals. Goals are reported, never asserted: a speed goal lives in a benchmark, not in a test.
 */
import type { LimitResult } from '../limit/limitResult.ts';
import type { ThroughputLimit } from '../limit/throughputLimit.ts';
import { BENCH_PROCESS, MAIN_PROCESS, throughputCeiling } from './cpuTime.ts';
import { coRunningAt } from './coRunning.ts';
import { goalOf, type ConfigRatio, type Goal, type Ratio, type RunRow, type VariantRatio } from './results.ts';

const GOALS = {
  /** Issue 46's (issue 15's was 0.05). */
  ttfpAsyncOverSyncAtC1: 0.07,
  ttfpAsyncOverSyncAtC10: 0.1,
  /** Issue 46: the p50 and the mean TTFP at c=1 over the critical-path limit. */
  ttfpOverLimitAtC1P50: 1.15,
  ttfpOverLimitAtC1: 1.25,
  /** Issue 46: streaming costs nothing end to end, at c=1 and c=10. */
  e2eAsyncOverSync: 1.0,
  underrunsAtC10: 0,
  /** req/s at c=10 over the throughput limit of 10 requests at batch 10. */
  throughputShareAtC10: 0.9,
  /** req/s at c=10 over the limit that charges co-running (coRunning.ts; issue 46). */
  coRunningShareAtC10: 0.85,
  /** Code2Wav frames decoded per frame of audio (each frame once, with a stateful vocoder). */
  code2wavDecodeRatio: 1.05,
} as const;

function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

/** Each run of variant `a` over the run of variant `b` at its concurrency (none where `b` did not run it). */
function ratiosBetween(runs: readonly RunRow[], a: (r: RunRow) => boolean, b: (r: RunRow) => boolean): VariantRatio[] {
  const out: VariantRatio[] = [];
  for (const x of runs.filter(a)) {
    const y = runs.find((r) => b(r) && r.concurrency === x.concurrency);
    if (!y) continue;
    out.push({
      concurrency: x.concurrency,
      ttfp: ratio(x.mean_ttfp_ms, y.mean_ttfp_ms),
      p50_ttfp: ratio(x.p50_ttfp_ms, y.p50_ttfp_ms),
      ttft: ratio(x.mean_ttft_ms, y.mean_ttft_ms),
      e2e: ratio(x.mean_e2e_ms, y.mean_e2e_ms),
      rtf: ratio(x.mean_rtf, y.mean_rtf),
    });
  }
  return out;
}

export function asyncSyncRatios(runs: readonly RunRow[]): Ratio[] {
  return ratiosBetween(
    runs,
    (r) => r.async_chunk,
    (r) => !r.async_chunk,
  ).map((x) => ({
    concurrency: x.concurrency,
    ttfp_async_over_sync: x.ttfp,
    p50_ttfp_async_over_sync: x.p50_ttfp,
    ttft_async_over_sync: x.ttft,
    e2e_async_over_sync: x.e2e,
    rtf_async_over_sync: x.rtf,
  }));
}

/** --config's runs (variant `config`) over --compare-config's (variant `compare`). */
export function configRatios(runs: readonly RunRow[], config: string, compare: string): ConfigRatio[] {
  return ratiosBetween(
    runs,
    (r) => r.variant === config,
    (r) => r.variant === compare,
  ).map((x) => ({ ...x, config, compare_config: compare }));
}

/** The goals that the measured data can speak to (a goal without its data is left out, not failed). */
export function evaluateGoals(
  runs: readonly RunRow[],
  ratios: readonly Ratio[],
  limit: LimitResult | null,
  throughputLimits: readonly ThroughputLimit[] = [],
): Goal[] {
  const goals: Goal[] = [];
  const atC = (c: number) => ratios.find((r) => r.concurrency === c)?.ttfp_async_over_sync ?? null;
  const c1 = atC(1);
  if (c1 !== null) goals.push(goalOf('TTFP async/sync at c=1', c1, '<=', GOALS.ttfpAsyncOverSyncAtC1));
  const c10 = atC(10);
  if (c10 !== null) goals.push(goalOf('TTFP async/sync at c=10', c10, '<=', GOALS.ttfpAsyncOverSyncAtC10));
  for (const c of [1, 10]) {
    const e2e = ratios.find((r) => r.concurrency === c)?.e2e_async_over_sync ?? null;
    if (e2e !== null) goals.push(goalOf(`E2E async/sync at c=${c}`, e2e, '<=', GOALS.e2eAsyncOverSync));
  }
  // Only --config's runs (the first variant: modes run in order): the limit was measured on its graph.
  const main = (r: RunRow) => r.async_chunk && r.variant === runs[0].variant;
  const asyncC1 = runs.find((r) => main(r) && r.concurrency === 1);
  if (limit && asyncC1?.p50_ttfp_ms != null) {
    const v = asyncC1.p50_ttfp_ms / limit.median.total_ms;
    goals.push(goalOf('TTFP/limit at c=1 (p50)', v, '<=', GOALS.ttfpOverLimitAtC1P50));
  }
  if (limit && asyncC1?.mean_ttfp_ms != null) {
    const v = asyncC1.mean_ttfp_ms / limit.median.total_ms;
    goals.push(goalOf('TTFP/limit at c=1 (mean)', v, '<=', GOALS.ttfpOverLimitAtC1));
  }
  const asyncC10 = runs.find((r) => main(r) && r.concurrency === 10);
  if (asyncC10) goals.push(goalOf('underruns at c=10', asyncC10.underruns, '=', GOALS.underrunsAtC10));
  // The worst async run of --config (the first variant): every concurrency must decode each frame about once.
  const decodeRatios = runs
    .filter((r) => main(r) && r.code2wav_decode_ratio !== null)
    .map((r) => r.code2wav_decode_ratio!);
  if (decodeRatios.length > 0) {
    const worst = Math.max(...decodeRatios);
    goals.push(goalOf('Code2Wav frames decoded per audio frame (worst run)', worst, '<=', GOALS.code2wavDecodeRatio));
  }
  const tp = throughputShare(runs, throughputLimits, 10);
  if (tp !== null) goals.push(goalOf('req/s at c=10 over the throughput limit', tp, '>=', GOALS.throughputShareAtC10));
  const co = coRunningAt(runs, throughputLimits, 10);
  if (co !== null)
    goals.push(
      goalOf('req/s at c=10 over the limit with co-running charged', co.share, '>=', GOALS.coRunningShareAtC10),
    );
  return goals;
}

/** --config's async req/s at concurrency c over the throughput limit at c (null without either). */
export function throughputShare(runs: readonly RunRow[], limits: readonly ThroughputLimit[], c: number): number | null {
  const run = runs.find((r) => r.async_chunk && r.variant === runs[0]?.variant && r.concurrency === c);
  const limit = limits.find((l) => l.batch === c);
  return run && limit && limit.limit_rps > 0 ? run.request_throughput / limit.limit_rps : null;
}

/**
 * The most of the throughput limit at c the machine's cores allow once main's and the bench's processes (servers the
 * bench started only) are charged beside the stages' times alone (cpuTime.ts throughputCeiling); null without the
 * figures.
 */
export function throughputCeilingAt(
  runs: readonly RunRow[],
  limits: readonly ThroughputLimit[],
  c: number,
): number | null {
  const run = runs.find((r) => r.async_chunk && r.variant === runs[0]?.variant && r.concurrency === c);
  const limit = limits.find((l) => l.batch === c);
  const best = limit && limits.find((l) => l.batch === limit.best_batch);
  const per = run?.cpu_bound_rps != null ? run.cpu_ms_per_request : null;
  const benchMs = per?.[BENCH_PROCESS];
  if (!limit || !best || !per || benchMs === undefined || limit.limit_rps <= 0) return null;
  const stagesMs = (best.thinker_ms + best.talker_ms + best.code2wav_ms) / best.batch;
  return throughputCeiling(limit, stagesMs, benchMs + (per[MAIN_PROCESS] ?? 0));
}

/** TTFP over the limit for every async run (the bench prints it per concurrency; the goal is at c=1). */
export function ttfpOverLimit(run: RunRow, limit: LimitResult | null): { mean: number; p50: number } | null {
  if (!limit || run.mean_ttfp_ms === null || run.p50_ttfp_ms === null) return null;
  return { mean: run.mean_ttfp_ms / limit.median.total_ms, p50: run.p50_ttfp_ms / limit.median.total_ms };
}
