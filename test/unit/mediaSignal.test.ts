/**
 * Signal front end: the mixed-radix FFT against a direct DFT, the resampler keeps a tone's frequency and
 * level and removes what would alias, and the log-mel features put a pure tone's energy in the mel bin
 * centred on it, with Whisper's frame count.
 */
import { describe, expect, it } from 'vitest';
import { FftPlan, RealFftPlan } from '../../src/media/fft.ts';
import { logMelSpectrogram, melCenterHz, melFilterbank } from '../../src/media/logMel.ts';
import { resample, resampledLength } from '../../src/media/resample.ts';

function tone(freqHz: number, rateHz: number, numSamples: number, amplitude = 0.5): Float32Array {
  return Float32Array.from({ length: numSamples }, (_, i) => amplitude * Math.sin((2 * Math.PI * freqHz * i) / rateHz));
}

/** Amplitude of the component at freqHz (a single-bin DFT over the middle of the signal, edges skipped). */
function amplitudeAt(x: Float32Array, freqHz: number, rateHz: number): number {
  const from = Math.floor(x.length / 4);
  const to = Math.floor((3 * x.length) / 4);
  let re = 0;
  let im = 0;
  for (let i = from; i < to; i++) {
    re += x[i] * Math.cos((2 * Math.PI * freqHz * i) / rateHz);
    im -= x[i] * Math.sin((2 * Math.PI * freqHz * i) / rateHz);
  }
  return (2 * Math.hypot(re, im)) / (to - from);
}

/** Frequency with the largest amplitude on a 1 Hz grid around a guess. */
function peakHz(x: Float32Array, rateHz: number, guessHz: number): number {
  let best = guessHz;
  let bestAmp = -1;
  for (let f = guessHz - 50; f <= guessHz + 50; f += 1) {
    const a = amplitudeAt(x, f, rateHz);
    if (a > bestAmp) [best, bestAmp] = [f, a];
  }
  return best;
}

describe('FftPlan', () => {
  it('matches a direct DFT for mixed-radix and prime lengths', () => {
    for (const n of [1, 2, 8, 12, 400, 7, 49, 210]) {
      const re = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 1.3) + (i % 3));
      const im = Float64Array.from({ length: n }, (_, i) => Math.cos(i * 0.7));
      const outRe = new Float64Array(n);
      const outIm = new Float64Array(n);
      new FftPlan(n).transform(re, im, outRe, outIm);
      for (let k = 0; k < n; k++) {
        let dr = 0;
        let di = 0;
        for (let t = 0; t < n; t++) {
          const a = (-2 * Math.PI * k * t) / n;
          dr += re[t] * Math.cos(a) - im[t] * Math.sin(a);
          di += re[t] * Math.sin(a) + im[t] * Math.cos(a);
        }
        expect(Math.abs(outRe[k] - dr)).toBeLessThan(1e-9 * n);
        expect(Math.abs(outIm[k] - di)).toBeLessThan(1e-9 * n);
      }
    }
  });
});

describe('RealFftPlan', () => {
  it('gives bins 0..n/2 of a real signal, as the complex transform does', () => {
    for (const n of [2, 8, 18, 400]) {
      const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 0.9) + ((i * 7) % 5) / 5);
      const fullRe = new Float64Array(n);
      const fullIm = new Float64Array(n);
      new FftPlan(n).transform(x, null, fullRe, fullIm);
      const re = new Float64Array(n / 2 + 1);
      const im = new Float64Array(n / 2 + 1);
      new RealFftPlan(n).transform(x, re, im);
      for (let k = 0; k <= n / 2; k++) {
        expect(Math.abs(re[k] - fullRe[k])).toBeLessThan(1e-9 * n);
        expect(Math.abs(im[k] - fullIm[k])).toBeLessThan(1e-9 * n);
      }
    }
  });
});

describe('resample', () => {
  it('keeps a tone at its frequency and level for common rates', () => {
    for (const [from, freq] of [
      [24000, 440],
      [44100, 1000],
      [48000, 3000],
      [8000, 1500],
      [22050, 2500],
    ] as const) {
      const x = tone(freq, from, from); // one second
      const y = resample(x, from, 16000);
      expect(y.length).toBe(16000);
      expect(peakHz(y, 16000, freq)).toBe(freq);
      expect(amplitudeAt(y, freq, 16000)).toBeCloseTo(0.5, 2);
    }
  });

  it('removes content above the new Nyquist instead of aliasing it', () => {
    // 10 kHz at 44.1 kHz would fold to 6 kHz at 16 kHz without the low-pass.
    const y = resample(tone(10000, 44100, 44100), 44100, 16000);
    expect(amplitudeAt(y, 6000, 16000)).toBeLessThan(0.5 * 1e-3);
  });

  it('handles an odd rate (rounded phases) and reports lengths', () => {
    const y = resample(tone(1000, 44101, 44101), 44101, 16000);
    expect(peakHz(y, 16000, 1000)).toBe(1000);
    expect(amplitudeAt(y, 1000, 16000)).toBeCloseTo(0.5, 2);
    expect(resampledLength(4, 24000, 16000)).toBe(3);
    expect(resample(Float32Array.of(1, 2), 16000, 16000)).toEqual(Float32Array.of(1, 2));
  });
});

describe('logMelSpectrogram', () => {
  it('has 80 bins and floor(n / 160) frames (Whisper drops the last centred frame)', () => {
    const out = logMelSpectrogram(new Float32Array(16000));
    expect(out.numMelBins).toBe(80);
    expect(out.numFrames).toBe(100);
    expect(out.mel.length).toBe(8000);
    expect(logMelSpectrogram(new Float32Array(30 * 16000)).numFrames).toBe(3000);
    expect(logMelSpectrogram(new Float32Array(161)).numFrames).toBe(1);
  });

  it('puts a pure tone in the mel bin centred on it', () => {
    const centers = melCenterHz();
    // Above ~1 kHz; lower down the mel filters are narrower than the 40 Hz FFT bins and a tone leaks into a neighbour.
    for (const bin of [28, 45, 70]) {
      const { mel, numFrames } = logMelSpectrogram(tone(centers[bin], 16000, 8000));
      // Not the first frame: reflect padding turns a sine into a kinked signal there, which leaks.
      for (const t of [2, Math.floor(numFrames / 2), numFrames - 3]) {
        let best = 0;
        for (let m = 1; m < 80; m++) if (mel[m * numFrames + t] > mel[best * numFrames + t]) best = m;
        expect(best).toBe(bin);
      }
      // Whisper's normalisation: the loudest value is (log10(max) + 4) / 4 and nothing sits more than 2 below it.
      const max = Math.max(...mel);
      expect(Math.min(...mel)).toBeGreaterThanOrEqual(max - 2 - 1e-6);
    }
  });

  it('builds Slaney-normalised triangular filters peaking at their centres', () => {
    const filters = melFilterbank();
    const centers = melCenterHz();
    for (const m of [0, 40, 79]) {
      const row = filters.subarray(m * 201, (m + 1) * 201);
      const peak = row.indexOf(Math.max(...row));
      expect(Math.abs(peak * 40 - centers[m])).toBeLessThanOrEqual(40);
    }
    // Area normalisation: wider (higher) filters are lower, so each passes about the same energy.
    expect(Math.max(...filters.subarray(79 * 201, 80 * 201))).toBeLessThan(Math.max(...filters.subarray(0, 201)));
  });
});
