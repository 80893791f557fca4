/** StreamingResampler: split-independent output, on the input's timeline, band-limited. */
import { describe, expect, it } from 'vitest';
import { StreamingResampler } from '../../src/voice/StreamingResampler.ts';

function tone(hz: number, rateHz: number, numSamples: number, phase = 0): Float32Array {
  return Float32Array.from({ length: numSamples }, (_, i) => 0.5 * Math.sin(2 * Math.PI * hz * (i / rateHz) + phase));
}

function rms(x: Float32Array): number {
  return Math.sqrt(x.reduce((s, v) => s + v * v, 0) / x.length);
}

/** Pushes `input` in pieces of the given sizes (cycled) and concatenates what comes out. */
function pushInPieces(input: Float32Array, sizes: number[]): Float32Array {
  const r = new StreamingResampler(24000, 16000);
  const out: number[] = [];
  for (let at = 0, k = 0; at < input.length; k++) {
    const n = sizes[k % sizes.length];
    out.push(...r.push(input.subarray(at, at + n)));
    at += n;
  }
  return Float32Array.from(out);
}

describe('StreamingResampler 24 -> 16 kHz', () => {
  const input = tone(440, 24000, 24000);

  it('gives the same samples however the input is split (odd sizes, single samples, empty pushes)', () => {
    const whole = pushInPieces(input, [input.length]);
    expect(pushInPieces(input, [480])).toEqual(whole);
    expect(pushInPieces(input, [1, 7, 0, 333, 2, 1001])).toEqual(whole);
  });

  it('emits output sample n once the input past n * 1.5 has arrived (small lookahead, nothing lost)', () => {
    const r = new StreamingResampler(24000, 16000);
    const lookahead = r.lookaheadSamples;
    expect(lookahead).toBeLessThan(24); // < 1 ms of waiting
    // After N inputs, outputs up to the one whose last tap is input N - 1 are out: 2/3 of (N - lookahead).
    const out = r.push(new Float32Array(4800));
    expect(out.length).toBe(Math.ceil(((4800 - lookahead) * 2) / 3));
  });

  it('keeps a 1 kHz tone on the input timeline (no delay) at unity gain', () => {
    const out = pushInPieces(tone(1000, 24000, 24000), [480]);
    const expected = tone(1000, 16000, out.length);
    // Skip the first ms (the filter's start against the silence before sample 0).
    let maxError = 0;
    for (let i = 32; i < out.length; i++) maxError = Math.max(maxError, Math.abs(out[i] - expected[i]));
    expect(maxError).toBeLessThan(0.01);
  });

  it('removes what would alias: a 10 kHz tone (above the 8 kHz Nyquist) comes out > 40 dB down', () => {
    const out = pushInPieces(tone(10000, 24000, 24000), [480]).subarray(100);
    expect(20 * Math.log10(rms(out) / (0.5 / Math.SQRT2))).toBeLessThan(-40);
  });

  it('reset() restarts at input sample 0', () => {
    const r = new StreamingResampler(24000, 16000);
    const first = r.push(input.subarray(0, 2400));
    r.push(tone(3000, 24000, 1234));
    r.reset();
    expect(r.push(input.subarray(0, 2400))).toEqual(first);
  });
});
