/**
 * `chorus bench --find-capacity`, the policy half: the highest Poisson rate whose admitted requests meet a TTFP SLO
 * at a quantile with no underrun, by bracketing (doubling or halving from the start rate until one step passes and
 * one fails) and then bisecting the bracket until it is within a relative tolerance. Each step is judged on its
 * whole window and on its second half alone: a queue that grows through the step (a rate beyond capacity that the
 * window was too short to show) fails there first, and the ratio of the halves' quantiles is reported as the step's
 * drift (how stable it was). Pure: the probe (a real open-loop run, or a fake server model in tests) is an input.
 */
import { percentile, requestMetrics } from '../metrics.ts';
import { isRefusal, type OpenLoopRecord } from './openLoopStats.ts';

/**
 * Refusals a passing step may have (share of its arrivals): a server refusing on its latency estimate admits only
 * what meets the SLO, so "admitted requests meet it" alone would pass any rate. Capacity is what it takes, not sheds.
 */
const MAX_REFUSED_SHARE = 0.01;

export interface CapacityStep {
  readonly rate: number;
  readonly passed: boolean;
  /** Why it failed (empty when it passed). */
  readonly why: string;
  readonly requests: number;
  readonly completed: number;
  readonly refused: number;
  readonly failed: number;
  readonly underruns: number;
  /** The TTFP quantile (ms) of the completed requests over the step, and over each half of its arrival window. */
  readonly ttfpQuantileMs: number | null;
  readonly firstHalfMs: number | null;
  readonly secondHalfMs: number | null;
  /** secondHalfMs / firstHalfMs: ~1 is steady; well above 1 is a queue that was still growing. */
  readonly drift: number | null;
  /** Completed requests beyond the quantile: how many samples the quantile rests on. */
  readonly tailSamples: number;
}

export interface StepCriteria {
  readonly sloTtfpMs: number;
  /** In (0, 1): 0.95 is p95. */
  readonly quantile: number;
  readonly windowMs: number;
}

function quantileMs(values: readonly number[], quantile: number): number | null {
  return values.length === 0 ? null : percentile(values, quantile * 100);
}

/** Judges one step's records (runOpenLoop's) against the SLO. */
export function judgeStep(rate: number, records: readonly OpenLoopRecord[], c: StepCriteria): CapacityStep {
  const refused = records.filter((r) => !r.trace.ok && isRefusal(r.trace.error)).length;
  const failed = records.filter((r) => !r.trace.ok && !isRefusal(r.trace.error)).length;
  const done = records.filter((r) => r.trace.ok).map((r) => ({ dueMs: r.dueMs, m: requestMetrics(r.trace) }));
  const ttfps = (list: typeof done) => list.map((d) => d.m.ttfpMs ?? d.m.ttftMs).filter((v): v is number => v !== null);
  const underruns = done.filter((d) => d.m.stalls.underruns > 0).length;
  const all = quantileMs(ttfps(done), c.quantile);
  const firstHalf = quantileMs(ttfps(done.filter((d) => d.dueMs < c.windowMs / 2)), c.quantile);
  const secondHalf = quantileMs(ttfps(done.filter((d) => d.dueMs >= c.windowMs / 2)), c.quantile);
  const q = `p${Math.round(c.quantile * 1000) / 10}`;
  const whys: string[] = [];
  if (done.length === 0) whys.push('nothing completed');
  if (failed > 0) whys.push(`${failed} failed`);
  if (records.length > 0 && refused / records.length > MAX_REFUSED_SHARE) whys.push(`${refused} refused`);
  if (underruns > 0) whys.push(`${underruns} underran`);
  if (all !== null && all > c.sloTtfpMs) whys.push(`TTFP ${q} ${Math.round(all)} ms > ${c.sloTtfpMs} ms`);
  else if (secondHalf !== null && secondHalf > c.sloTtfpMs)
    whys.push(`second half's TTFP ${q} ${Math.round(secondHalf)} ms > ${c.sloTtfpMs} ms (still growing)`);
  return {
    rate,
    passed: whys.length === 0,
    why: whys.join(', '),
    requests: records.length,
    completed: done.length,
    refused,
    failed,
    underruns,
    ttfpQuantileMs: all,
    firstHalfMs: firstHalf,
    secondHalfMs: secondHalf,
    drift: firstHalf !== null && secondHalf !== null && firstHalf > 0 ? secondHalf / firstHalf : null,
    tailSamples: Math.floor(done.length * (1 - c.quantile)),
  };
}

export interface SearchOptions {
  readonly startRate: number;
  /** Below this a failing rate ends the search with no capacity; above it a passing one ends it unbounded. */
  readonly minRate: number;
  readonly maxRate: number;
  /** Stop when (fail - pass) / pass is at most this. */
  readonly relTolerance: number;
  readonly maxSteps: number;
}

export interface SearchResult {
  /** The highest rate that passed (null: none did, down to minRate). */
  readonly capacity: number | null;
  /** The lowest rate that failed above it (null: none did, up to maxRate). */
  readonly failedAt: number | null;
  /** In the order run. */
  readonly steps: readonly CapacityStep[];
}

export async function searchCapacity(
  probe: (rate: number) => Promise<CapacityStep>,
  o: SearchOptions,
): Promise<SearchResult> {
  const steps: CapacityStep[] = [];
  // The bracket so far: the highest rate that passed, the lowest that failed.
  const at: { pass: number | null; fail: number | null } = { pass: null, fail: null };
  const run = async (rate: number): Promise<boolean> => {
    const step = await probe(rate);
    steps.push(step);
    if (step.passed) at.pass = Math.max(at.pass ?? 0, rate);
    else at.fail = Math.min(at.fail ?? Infinity, rate);
    return step.passed;
  };
  // 1. Bracket: double while it passes, halve while it fails.
  let rate = o.startRate;
  while (steps.length < o.maxSteps) {
    const passed = await run(rate);
    if (at.pass !== null && at.fail !== null) break;
    const next = passed ? rate * 2 : rate / 2;
    if (next > o.maxRate || next < o.minRate) break;
    rate = next;
  }
  // 2. Bisect the bracket (geometric midpoint: rates span orders of magnitude, the tolerance is relative).
  for (;;) {
    const { pass, fail } = at;
    if (pass === null || fail === null || steps.length >= o.maxSteps || (fail - pass) / pass <= o.relTolerance) break;
    const mid = roundRate(Math.sqrt(pass * fail));
    if (mid <= pass || mid >= fail) break; // the rounding left nothing between them
    await run(mid);
  }
  return { capacity: at.pass, failedAt: at.fail, steps };
}

/** Rates in the report read as set: 3 significant digits. */
function roundRate(rate: number): number {
  return Number(rate.toPrecision(3));
}

export interface CapacityOptions {
  /** --slo-quantile: the TTFP quantile held to the SLO (0.95: p95). */
  readonly quantile: number;
  /** Where the search starts (the first --request-rate, else 1 req/s). */
  readonly startRate: number;
  /** Stop bisecting when the bracket is within this share of the capacity. */
  readonly relTolerance: number;
  readonly maxSteps: number;
  /** With two servers: both run at these multiples of the first's capacity (--capacity-multiples). */
  readonly multiples: readonly number[];
}

export interface CapacityReport {
  readonly variant: string;
  readonly slo_ttfp_ms: number;
  readonly quantile: number;
  /** The highest rate that passed; null when none did down to the search's floor. */
  readonly capacity_rps: number | null;
  /** The lowest rate that failed above it; null when none did up to the search's ceiling. */
  readonly failed_at_rps: number | null;
  readonly step_window_s: number | null;
  readonly steps: readonly CapacityStep[];
}
