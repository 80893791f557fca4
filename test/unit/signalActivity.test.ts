/** SignalActivity: where a VAD window's signal stops being louder than the room, against a floor it measures. */
import { describe, expect, it } from 'vitest';
import { SignalActivity, SUBFRAME_SAMPLES, UNKNOWN_ACTIVITY } from '../../src/voice/SignalActivity.ts';

const WINDOW = 512;
/** A window of seeded white noise at `dbfs` (RMS), with samples [from, to) replaced by a tone at `toneDbfs`. */
function window(dbfs: number, seed: number, tone?: { from: number; to: number; dbfs: number }): Float32Array {
  const out = new Float32Array(WINDOW);
  const amp = 10 ** (dbfs / 20) * Math.sqrt(3); // uniform noise: RMS = amp / sqrt(3)
  let s = seed;
  for (let i = 0; i < WINDOW; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out[i] = ((s / 0x7fffffff) * 2 - 1) * amp;
  }
  if (tone) for (let i = tone.from; i < tone.to; i++) out[i] = 10 ** (tone.dbfs / 20) * Math.SQRT2 * Math.sin(i / 3);
  return out;
}

describe('SignalActivity', () => {
  it('is unknown until the room was heard, then codes the last sub-frame over the floor', () => {
    const a = new SignalActivity();
    expect(a.next(window(-55, 1), 0.9)).toBe(UNKNOWN_ACTIVITY); // speech-rated windows do not measure the room
    for (let k = 0; k < 3; k++) expect(a.next(window(-55, 2 + k), 0.05)).toBe(UNKNOWN_ACTIVITY);
    expect(a.next(window(-55, 9), 0.05)).toBe(0); // room noise alone is not active
    // A tone at -30 dBFS in samples 0..200: active through sub-frame 200 / 64 -> the 4th (index 3).
    expect(a.next(window(-55, 10, { from: 0, to: 200, dbfs: -30 }), 0.9)).toBe(Math.ceil(200 / SUBFRAME_SAMPLES));
    expect(a.next(window(-55, 11, { from: 0, to: WINDOW, dbfs: -30 }), 0.9)).toBe(WINDOW / SUBFRAME_SAMPLES);
    // 5 dB over the room is not activity; 15 dB is.
    expect(a.next(window(-55, 12, { from: 0, to: WINDOW, dbfs: -50 }), 0.9)).toBe(0);
    expect(a.next(window(-55, 13, { from: 0, to: 64, dbfs: -40 }), 0.9)).toBe(1);
  });

  it('follows a room that gets louder (slowly) or quieter (at once); digital silence has a floor', () => {
    const a = new SignalActivity();
    for (let k = 0; k < 4; k++) a.next(new Float32Array(WINDOW), 0.01);
    // After digital silence, faint hiss at -70 dBFS is still not activity (the floor stops at -65 dBFS).
    expect(a.next(window(-70, 1), 0.01)).toBe(0);
    expect(a.next(window(-45, 2), 0.01)).toBe(WINDOW / SUBFRAME_SAMPLES); // a room 25 dB louder: active at first
    let k = 0;
    while (a.next(window(-45, 3 + k), 0.01) !== 0) k++;
    expect(k).toBeGreaterThan(10); // it took a while
    expect(k).toBeLessThan(200);
    // Speech-rated windows never raise the floor, however long.
    for (let j = 0; j < 300; j++) a.next(window(-20, 500 + j), 0.95);
    expect(a.next(window(-45, 900, { from: 0, to: 64, dbfs: -30 }), 0.95)).toBe(1);
    // reset() forgets the room.
    a.reset();
    expect(a.next(window(-45, 901), 0.01)).toBe(UNKNOWN_ACTIVITY);
  });
});
