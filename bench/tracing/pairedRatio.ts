/**
 * A ratio measured in rounds: each round gives A over B from two runs made one after the other, so that the
 * machine's drift over minutes falls on both. The rounds' ratios are combined on the log scale (a ratio of 1.1 and
 * one of 1 / 1.1 cancel): their geometric mean, and a 95% confidence interval from Student's t over the logs. A
 * latency's percentile is better taken over every round's samples pooled (pooledPercentileRatio).
 */
import jstat from 'jstat';
import { percentile } from '../ttfp/metrics.ts';

export interface PairedRatio {
  readonly rounds: number;
  /** The geometric mean of the rounds' ratios. */
  readonly ratio: number;
  /** The 95% confidence interval of that mean (null with fewer than two rounds). */
  readonly low: number | null;
  readonly high: number | null;
  readonly min: number;
  readonly max: number;
}

export function pairedRatio(ratios: readonly number[]): PairedRatio | null {
  const logs = ratios.filter((r) => Number.isFinite(r) && r > 0).map(Math.log);
  const n = logs.length;
  if (n === 0) return null;
  const mean = logs.reduce((a, x) => a + x, 0) / n;
  const base = { rounds: n, ratio: Math.exp(mean), min: Math.exp(Math.min(...logs)), max: Math.exp(Math.max(...logs)) };
  if (n < 2) return { ...base, low: null, high: null };
  const sd = Math.sqrt(logs.reduce((a, x) => a + (x - mean) ** 2, 0) / (n - 1));
  const half = jstat.jStat.studentt.inv(0.975, n - 1) * (sd / Math.sqrt(n));
  return { ...base, low: Math.exp(mean - half), high: Math.exp(mean + half) };
}

/** `1.021x [1.004, 1.038]` (the interval left out when there is none). */
export function formatRatio(r: PairedRatio | null): string {
  if (!r) return 'n/a';
  const x = (v: number) => `${v.toFixed(3)}x`;
  return r.low === null ? x(r.ratio) : `${x(r.ratio)} [${r.low.toFixed(3)}, ${r.high!.toFixed(3)}]`;
}

/** One round's samples of a latency, side A's and side B's (e.g. every request's TTFP). */
export interface RoundSamples {
  readonly a: readonly number[];
  readonly b: readonly number[];
}

/**
 * A percentile of A's samples over the same percentile of B's, every round's samples pooled: a round's p50 of a wave
 * of ten moves with the order the prefills land in, while the p50 of all rounds' requests does not, and the machine's
 * drift falls on both sides alike when each round alternates them. Its 95% interval is a percentile bootstrap over
 * rounds (whole rounds resampled, so a slow minute stays one unit): `resamples` draws with `random` (default
 * Math.random). min / max are the single rounds' ratios.
 */
export function pooledPercentileRatio(
  rounds: readonly RoundSamples[],
  p = 50,
  resamples = 4000,
  random: () => number = Math.random,
): PairedRatio | null {
  const usable = rounds.filter((r) => r.a.length > 0 && r.b.length > 0);
  const n = usable.length;
  if (n === 0) return null;
  const ratioOf = (picked: readonly RoundSamples[]) =>
    percentile(
      picked.flatMap((r) => r.a),
      p,
    ) /
    percentile(
      picked.flatMap((r) => r.b),
      p,
    );
  const single = usable.map((r) => ratioOf([r]));
  const base = { rounds: n, ratio: ratioOf(usable), min: Math.min(...single), max: Math.max(...single) };
  if (n < 2) return { ...base, low: null, high: null };
  const draws = Array.from({ length: resamples }, () =>
    ratioOf(Array.from({ length: n }, () => usable[Math.floor(random() * n)])),
  );
  return { ...base, low: percentile(draws, 2.5), high: percentile(draws, 97.5) };
}
