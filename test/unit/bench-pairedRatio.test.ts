/**
 * Rounds of A over B combined (bench/tracing/pairedRatio.ts): on the log scale, with a Student's t interval that
 * narrows as the rounds agree and widens as they scatter.
 */
import { describe, expect, it } from 'vitest';
import { formatRatio, pairedRatio } from '../../bench/tracing/pairedRatio.ts';

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
