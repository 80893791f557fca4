/**
 * Rounds of A over B combined (bench/tracing/pairedRatio.ts): on the log scale, with a Student's t interval that
 * narrows as the rounds agree and widens as they scatter.
 */
import { describe, expect, it } from 'vitest';
import { formatRatio, pairedRatio, pooledPercentileRatio } from '../../bench/tracing/pairedRatio.ts';
import { seededRandom } from '../../bench/ttfp/prompts.ts';

describe('pairedRatio', () => {
  it('takes the geometric mean: a ratio and its inverse cancel', () => {
    const r = pairedRatio([1.1, 1 / 1.1])!;
    expect(r.ratio).toBeCloseTo(1, 12);
    expect(r.min).toBeCloseTo(1 / 1.1, 12);
    expect(r.max).toBeCloseTo(1.1, 12);
  });

  it('gives the t interval of the mean log: 12.706 standard errors wide each side with two rounds', () => {
    const r = pairedRatio([Math.exp(0.1), Math.exp(0.3)])!;
    // mean 0.2, sd 0.1414, standard error 0.1; t(0.975, 1) = 12.7062
    expect(Math.log(r.ratio)).toBeCloseTo(0.2, 12);
    expect(Math.log(r.high!) - 0.2).toBeCloseTo(1.27062, 4);
    expect(0.2 - Math.log(r.low!)).toBeCloseTo(1.27062, 4);
  });

  it('narrows as more rounds agree, and holds the true ratio', () => {
    const tight = pairedRatio([1.02, 1.03, 1.01, 1.02, 1.03, 1.01, 1.02, 1.02])!;
    const loose = pairedRatio([1.12, 0.93, 1.01, 1.1, 0.95, 1.03, 0.96, 1.06])!;
    expect(tight.high! - tight.low!).toBeLessThan(0.02);
    expect(loose.high! - loose.low!).toBeGreaterThan(0.08);
    expect(tight.low!).toBeGreaterThan(1);
    expect(loose.low!).toBeLessThan(1);
    expect(loose.high!).toBeGreaterThan(1);
  });

  it('has no interval from one round, and skips rounds without a ratio', () => {
    expect(pairedRatio([1.05])).toMatchObject({ rounds: 1, low: null, high: null });
    expect(pairedRatio([NaN, 0, 1.05, 1.05])).toMatchObject({ rounds: 2 });
    expect(pairedRatio([NaN])).toBeNull();
    expect(formatRatio(null)).toBe('n/a');
    expect(formatRatio(pairedRatio([1.05]))).toBe('1.050x');
    expect(formatRatio(pairedRatio([1.05, 1.05]))).toBe('1.050x [1.050, 1.050]');
  });
});

describe('pooledPercentileRatio', () => {
  /** n samples spread evenly over center * [0.5, 1.5). */
  const spread = (center: number, n: number) => Array.from({ length: n }, (_, i) => center * (0.5 + (i + 0.5) / n));

  it("takes the percentile of every round's samples pooled, not a mean of the rounds'", () => {
    // Round 1 fast, round 2 slow, both sides alike in each: the pooled p50s match, whatever the drift.
    const r = pooledPercentileRatio([
      { a: [1, 2, 3], b: [1, 2, 3] },
      { a: [10, 20, 30], b: [10, 20, 30] },
    ])!;
    expect(r.ratio).toBe(1);
    expect([r.min, r.max, r.low, r.high]).toEqual([1, 1, 1, 1]);
    const shifted = pooledPercentileRatio([{ a: [2, 4, 6], b: [1, 2, 3] }])!;
    expect(shifted).toMatchObject({ rounds: 1, ratio: 2, low: null, high: null });
    expect(pooledPercentileRatio([{ a: [], b: [1] }])).toBeNull();
  });

  it('resolves a 3% shift that single rounds scatter around, with an interval over whole rounds', () => {
    // 16 rounds of 100 requests a side, the machine's speed drifting by up to 30% between rounds, and side A's
    // requests 3% slower give or take 5% a round.
    const rounds = Array.from({ length: 16 }, (_, r) => {
      const drift = 0.85 + (0.3 * ((r * 7) % 16)) / 15;
      const luck = 1 + 0.05 * Math.sin(r * 2.1);
      return { a: spread(30 * drift * 1.03 * luck, 100), b: spread(30 * drift, 100) };
    });
    // 400 seeded draws: the interval's assertions hold for every seed 1-30 tried; 2000 unseeded draws cost 1 s of CPU.
    const r = pooledPercentileRatio(rounds, 50, 400, seededRandom(7))!;
    expect(r.max - r.min).toBeGreaterThan(0.08); // single rounds scatter more than the shift
    expect(r.ratio).toBeGreaterThan(1.01);
    expect(r.ratio).toBeLessThan(1.05);
    expect(r.low!).toBeLessThanOrEqual(r.ratio);
    expect(r.high!).toBeGreaterThanOrEqual(r.ratio);
    expect(r.low!).toBeGreaterThan(r.min);
    expect(r.high!).toBeLessThan(r.max);
  });
});
