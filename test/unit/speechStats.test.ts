/**
 * The speech bounds of the tts tests (test/helpers/speechStats.ts) reject what is not speech: white noise, a
 * steady tone, silence, a clipped signal. (That real speech passes is test/model/tts/piperSpeech.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { speechProblems, speechStats } from '../helpers/speechStats.ts';

const RATE = 22050;
const seconds = (s: number, f: (i: number) => number) => Float32Array.from({ length: s * RATE }, (_, i) => f(i));
// A fixed pseudo-random sequence (no Math.random in tests): a 32-bit LCG in [-1, 1).
function noise(): () => number {
  let state = 12345;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  };
}

describe('speech bounds', () => {
  it('reject white noise (no voicing, too many zero crossings, no pauses)', () => {
    const n = noise();
    const problems = speechProblems(
      speechStats(
        seconds(3, () => 0.2 * n()),
        RATE,
      ),
      3,
    );
    expect(problems.some((p) => p.startsWith('voiced'))).toBe(true);
    expect(problems.some((p) => p.includes('zero crossings'))).toBe(true);
  });

  it('reject a steady tone (no pauses, too few crossings) and silence', () => {
    const tone = seconds(3, (i) => 0.3 * Math.sin((2 * Math.PI * 120 * i) / RATE));
    expect(speechProblems(speechStats(tone, RATE), 3)).toEqual([
      'sound in 100% of frames (speech pauses: 50-98%)',
      '240 zero crossings/s outside 300-5000',
    ]);
    expect(speechProblems(speechStats(new Float32Array(3 * RATE), RATE), 3).length).toBeGreaterThanOrEqual(3);
  });

  it('reject a duration off by more than 2x and clipping', () => {
    const loud = seconds(1, (i) => Math.max(-1, Math.min(1, 3 * Math.sin((2 * Math.PI * 200 * i) / RATE))));
    const problems = speechProblems(speechStats(loud, RATE), 3);
    expect(problems.some((p) => p.startsWith('duration 1.00 s'))).toBe(true);
    expect(problems.some((p) => p.includes('clipped'))).toBe(true);
  });
});
