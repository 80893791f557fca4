/**
 * Whisper's audio front end: 16 kHz mono -> log-mel features [numMelBins][numFrames], 100 frames/s.
 *
 * - STFT: 400-sample (25 ms) periodic Hann window, 160-sample (10 ms) hop, centred frames (the signal is
 *   reflect-padded by 200 samples on each side), and the last frame dropped, so numFrames = floor(n / 160).
 * - Power spectrum |X|^2 of bins 0..200 (40 Hz apart), through 80 triangular mel filters on the Slaney
 *   mel scale with Slaney area normalisation (librosa's defaults, which Whisper's filters come from).
 * - log10 with a 1e-10 floor, clamped below at a FIXED level, then (x + 4) / 4.
 *
 * Whisper clamps at (the clip's loudest value - 8), which makes every frame depend on the whole clip: a frame
 * computed while the user is still speaking could change when a louder syllable comes later. Chorus clamps at
 * MEL_LOG_FLOOR, Whisper's level for a clip whose loudest bin is that of a full-scale tone (~2), so a frame
 * depends only on the samples under its window and speech can be featurised as it arrives (the same frames,
 * bit for bit, as from the whole clip). Quiet clips keep a little more of their noise floor than Whisper's.
 */
import { RealFftPlan } from './fft.ts';

export const MEL_SAMPLE_RATE_HZ = 16000;
export const MEL_WINDOW_SAMPLES = 400; // 25 ms
export const MEL_HOP_SAMPLES = 160; // 10 ms
export const MEL_NUM_BINS = 80;
const NUM_FREQS = MEL_WINDOW_SAMPLES / 2 + 1;
const LOG_FLOOR = 1e-10;
/** log10 power below which every value reads the same: 80 dB under a full-scale tone's loudest bin. */
export const MEL_LOG_FLOOR = -6;

export interface LogMel {
  /** [numMelBins][numFrames], row-major: the layout of the encoder's input_features [B, bins, frames]. */
  readonly mel: Float32Array;
  readonly numMelBins: number;
  readonly numFrames: number;
}

export function melFrameCount(numSamples16k: number): number {
  return Math.floor(numSamples16k / MEL_HOP_SAMPLES);
}

// Slaney mel scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above.
const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOG_STEP = Math.log(6.4) / 27;

export function hzToMel(hz: number): number {
  return hz < MIN_LOG_HZ ? hz / F_SP : MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP;
}

export function melToHz(mel: number): number {
  return mel < MIN_LOG_MEL ? mel * F_SP : MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL));
}

/** The centre frequency of each mel filter, Hz (its triangle peaks there). */
export function melCenterHz(numMelBins = MEL_NUM_BINS, sampleRateHz = MEL_SAMPLE_RATE_HZ): number[] {
  const top = hzToMel(sampleRateHz / 2);
  return Array.from({ length: numMelBins }, (_, i) => melToHz((top * (i + 1)) / (numMelBins + 1)));
}

/** [numMelBins][numFreqs] triangular filters, each scaled by 2 / (its width in Hz). */
export function melFilterbank(
  numMelBins = MEL_NUM_BINS,
  nFft = MEL_WINDOW_SAMPLES,
  sampleRateHz = MEL_SAMPLE_RATE_HZ,
): Float32Array {
  const numFreqs = nFft / 2 + 1;
  const top = hzToMel(sampleRateHz / 2);
  const edges = Array.from({ length: numMelBins + 2 }, (_, i) => melToHz((top * i) / (numMelBins + 1)));
  const out = new Float32Array(numMelBins * numFreqs);
  for (let m = 0; m < numMelBins; m++) {
    const [lo, mid, hi] = [edges[m], edges[m + 1], edges[m + 2]];
    const norm = 2 / (hi - lo);
    for (let k = 0; k < numFreqs; k++) {
      const f = (k * sampleRateHz) / nFft;
      const w = Math.max(0, Math.min((f - lo) / (mid - lo), (hi - f) / (hi - mid)));
      out[m * numFreqs + k] = w * norm;
    }
  }
  return out;
}

interface FrontEnd {
  readonly plan: RealFftPlan;
  readonly window: Float64Array;
  readonly filters: Float32Array;
  /** Each filter's non-zero bins [first, end): a triangle covers a few bins of 201, so skip the zeros. */
  readonly first: Int32Array;
  readonly end: Int32Array;
}

let shared: FrontEnd | undefined;
function frontEnd(): FrontEnd {
  if (!shared) {
    const window = new Float64Array(MEL_WINDOW_SAMPLES);
    for (let i = 0; i < MEL_WINDOW_SAMPLES; i++)
      window[i] = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / MEL_WINDOW_SAMPLES); // periodic
    const filters = melFilterbank();
    const first = new Int32Array(MEL_NUM_BINS);
    const end = new Int32Array(MEL_NUM_BINS);
    for (let m = 0; m < MEL_NUM_BINS; m++) {
      const row = filters.subarray(m * NUM_FREQS, (m + 1) * NUM_FREQS);
      first[m] = Math.max(
        0,
        row.findIndex((w) => w > 0),
      );
      end[m] = row.findLastIndex((w) => w > 0) + 1;
    }
    shared = { plan: new RealFftPlan(MEL_WINDOW_SAMPLES), window, filters, first, end };
  }
  return shared;
}

/** x[i] for any integer i, mirrored at both ends without repeating the edge sample (numpy/torch "reflect"). */
function reflectIndex(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  let j = ((i % period) + period) % period;
  if (j >= n) j = period - j;
  return j;
}

/**
 * `clamp`: 'fixed' (the default, above) or 'clip': Whisper's own rule, the clip's loudest value - 8, for a whole
 * clip transcribed at once (the ASR stage), where it matches the reference implementations value for value.
 */
export function logMelSpectrogram(samples16k: Float32Array, clamp: 'fixed' | 'clip' = 'fixed'): LogMel {
  const n = samples16k.length;
  const numFrames = melFrameCount(n);
  const { plan, window, filters, first, end } = frontEnd();
  const mel = new Float32Array(MEL_NUM_BINS * numFrames);
  const frame = new Float64Array(MEL_WINDOW_SAMPLES);
  const re = new Float64Array(NUM_FREQS);
  const im = new Float64Array(NUM_FREQS);
  const power = new Float64Array(NUM_FREQS);
  const half = MEL_WINDOW_SAMPLES / 2;
  for (let t = 0; t < numFrames; t++) {
    const start = t * MEL_HOP_SAMPLES - half; // centred on sample t * hop
    for (let i = 0; i < MEL_WINDOW_SAMPLES; i++) {
      const s = start + i;
      frame[i] = window[i] * samples16k[s >= 0 && s < n ? s : reflectIndex(s, n)];
    }
    plan.transform(frame, re, im);
    for (let k = 0; k < NUM_FREQS; k++) power[k] = re[k] * re[k] + im[k] * im[k];
    for (let m = 0; m < MEL_NUM_BINS; m++) {
      let acc = 0;
      const row = m * NUM_FREQS;
      for (let k = first[m]; k < end[m]; k++) acc += filters[row + k] * power[k];
      mel[m * numFrames + t] = Math.log10(Math.max(acc, LOG_FLOOR));
    }
  }
  let floor = MEL_LOG_FLOOR;
  if (clamp === 'clip') {
    floor = -Infinity;
    for (const v of mel) floor = Math.max(floor, v - 8);
  }
  for (let i = 0; i < mel.length; i++) mel[i] = (Math.max(mel[i], floor) + 4) / 4;
  return { mel, numMelBins: MEL_NUM_BINS, numFrames };
}
