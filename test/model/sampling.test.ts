/** Sampling on hand-made logits: every knob changes what it should and nothing else. */
import { describe, expect, it } from 'vitest';
import { Prng } from '../../stages/sampling/Prng.ts';
import { drawStream, sampleToken } from '../../stages/sampling/sampleToken.ts';
import { stopReason } from '../../stages/sampling/stopping.ts';
import { sampling } from './helpers.ts';

const logits = Float32Array.from([1, 5, 3, 4.9, -2, 0]);

function histogram(params: ReturnType<typeof sampling>, draws: number, options = {}): number[] {
  const counts = new Array(logits.length).fill(0);
  for (let i = 0; i < draws; i++) counts[sampleToken(logits, params, drawStream(params.seed, i), options)]++;
  return counts;
}

describe('sampleToken', () => {
  it('greedy picks the maximum and leaves the logits untouched', () => {
    const copy = logits.slice();
    expect(sampleToken(logits, sampling(), new Prng(1))).toBe(1);
    expect(logits).toEqual(copy);
  });

  it('banned ids are never chosen', () => {
    expect(sampleToken(logits, sampling(), new Prng(1), { banned: [1] })).toBe(3);
    expect(histogram(sampling({ temperature: 5 }), 2000, { banned: [1, 3] })[1]).toBe(0);
  });

  it('repetition penalty divides positive logits of seen ids', () => {
    expect(sampleToken(logits, sampling({ repetitionPenalty: 1.1 }), new Prng(1), { seen: [1] })).toBe(3);
    expect(sampleToken(logits, sampling({ repetitionPenalty: 1 }), new Prng(1), { seen: [1] })).toBe(1);
  });

  it('temperature spreads choices in proportion to softmax', () => {
    const counts = histogram(sampling({ temperature: 1, seed: 3 }), 20000);
    // p(1) / p(3) = e^0.1 ~ 1.105; p(2) / p(1) = e^-2.
    expect(counts[1] / counts[3]).toBeGreaterThan(1.0);
    expect(counts[1] / counts[3]).toBeLessThan(1.22);
    expect(counts[2] / counts[1]).toBeGreaterThan(0.1);
    expect(counts[2] / counts[1]).toBeLessThan(0.17);
  });

  it('top-k keeps the k best, top-p the smallest prefix reaching p', () => {
    const k2 = histogram(sampling({ temperature: 100, topK: 2, seed: 4 }), 4000);
    expect(k2.filter((c) => c > 0).length).toBe(2);
    expect(k2[1] + k2[3]).toBe(4000);
    // At temperature 1, ids 1 and 3 hold ~0.73 of the mass: top_p 0.7 keeps both, top_p 0.4 only id 1.
    const p7 = histogram(sampling({ temperature: 1, topP: 0.7, seed: 5 }), 4000);
    expect(p7[1] + p7[3]).toBe(4000);
    expect(p7[3]).toBeGreaterThan(0);
    expect(histogram(sampling({ temperature: 1, topP: 0.4, seed: 6 }), 500)[1]).toBe(500);
  });

  it('randomness depends on (seed, position) only', () => {
    const a = histogram(sampling({ temperature: 3, seed: 7 }), 50);
    const b = histogram(sampling({ temperature: 3, seed: 7 }), 50);
    expect(a).toEqual(b);
    const draws = (seed: number) =>
      Array.from({ length: 64 }, (_, p) => sampleToken(logits, sampling({ temperature: 3 }), drawStream(seed, p)));
    expect(draws(1)).toEqual(draws(1));
    expect(draws(1)).not.toEqual(draws(2));
  });
});

describe('stopReason', () => {
  it('stops on eos unless ignored, on stop tokens, and at max tokens', () => {
    const p = sampling({ maxTokens: 3, stopTokenIds: [9] });
    expect(stopReason(256, 1, p, 256)).toBe('stop');
    expect(stopReason(256, 1, { ...p, ignoreEos: true }, 256)).toBeNull();
    expect(stopReason(9, 1, p, 256)).toBe('stop');
    expect(stopReason(5, 2, p, 256)).toBeNull();
    expect(stopReason(5, 3, p, 256)).toBe('length');
  });
});
