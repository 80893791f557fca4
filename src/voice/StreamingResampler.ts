/**
 * Streaming rational-ratio resampling (polyphase Kaiser-windowed sinc) for audio that arrives in pieces: the
 * Realtime input (24 kHz) going to the VAD model (16 kHz). Same filter design as src/media/resample.ts, which
 * only converts whole buffers; this one keeps the last taps' worth of input between pushes.
 *
 * What must stay true: the output does not depend on how the input was split. Output n sits at input instant
 * n * down / up, exactly as in the one-shot resampler, and is emitted only once every input sample its taps
 * touch has arrived (a lookahead of halfTaps = 15 input samples, 0.6 ms at 24 kHz). Audio before the first sample
 * is silence. So output sample n of a 24 -> 16 kHz stream is at n / 16000 s of the input timeline, which is
 * what lets the VAD place its windows on the caller's clock.
 */

import { besselI0, gcd } from '../media/resample.ts';
import { appendGrowing } from '../common/arrays.ts';

const ZERO_CROSSINGS = 8; // lobes each side of the cutoff: ~-70 dB stopband past 9 kHz, plenty for a VAD
const KAISER_BETA = 6;
const ROLLOFF = 0.9; // cutoff as a fraction of the lower Nyquist: room for the short filter's transition band

export class StreamingResampler {
  readonly fromHz: number;
  readonly toHz: number;
  readonly #up: number;
  readonly #down: number;
  readonly #halfTaps: number;
  readonly #numTaps: number;
  readonly #weights: Float64Array; // [up phases][numTaps]; tap j multiplies input base + j - halfTaps + 1
  /** Input kept for taps still to come; history[0] is absolute input sample #historyStart (< 0: silence). */
  #history = new Float32Array(4096);
  #historyStart = 0;
  #historyLength = 0;
  #nextOutput = 0;

  constructor(fromHz: number, toHz: number) {
    if (!Number.isInteger(fromHz) || !Number.isInteger(toHz) || fromHz <= 0 || toHz <= 0) {
      throw new RangeError(`sample rates must be positive integers, got ${fromHz} -> ${toHz}`);
    }
    this.fromHz = fromHz;
    this.toHz = toHz;
    const g = gcd(fromHz, toHz);
    this.#up = toHz / g;
    this.#down = fromHz / g;
    if (this.#up > 64) throw new RangeError(`${fromHz} -> ${toHz} needs ${this.#up} filter phases (at most 64)`);
    const scale = Math.min(1, toHz / fromHz) * ROLLOFF; // cutoff in cycles per input sample, * 2
    const halfWidth = ZERO_CROSSINGS / scale;
    this.#halfTaps = Math.ceil(halfWidth) + 1;
    this.#numTaps = 2 * this.#halfTaps;
    this.#weights = new Float64Array(this.#up * this.#numTaps);
    const i0Beta = besselI0(KAISER_BETA);
    for (let p = 0; p < this.#up; p++) {
      const row = p * this.#numTaps;
      let sum = 0;
      for (let j = 0; j < this.#numTaps; j++) {
        const dist = p / this.#up - (j - this.#halfTaps + 1); // output instant minus tap instant, in input samples
        const r = dist / halfWidth;
        if (Math.abs(r) >= 1) continue;
        const x = Math.PI * scale * dist;
        const sinc = x === 0 ? 1 : Math.sin(x) / x;
        this.#weights[row + j] = (sinc * besselI0(KAISER_BETA * Math.sqrt(1 - r * r))) / i0Beta;
        sum += this.#weights[row + j];
      }
      for (let j = 0; j < this.#numTaps; j++) this.#weights[row + j] /= sum; // unit DC gain per phase
    }
    this.reset();
  }

  /** Input samples an output waits for past its own instant. */
  get lookaheadSamples(): number {
    return this.#halfTaps;
  }

  /** Forgets all input: the next sample pushed is input sample 0 again, preceded by silence. */
  reset(): void {
    this.#historyStart = -this.#halfTaps;
    this.#historyLength = this.#halfTaps;
    this.#history.fill(0, 0, this.#halfTaps);
    this.#nextOutput = 0;
  }

  /** Appends input samples and returns every output sample whose taps are now complete. */
  push(input: Float32Array): Float32Array {
    this.#append(input);
    const up = this.#up;
    const down = this.#down;
    const numTaps = this.#numTaps;
    const inputEnd = this.#historyStart + this.#historyLength; // absolute index one past the last input sample
    // Output n is complete when its last tap, input floor(n*down/up) + halfTaps, has arrived, i.e. when
    // floor(n*down/up) <= lastBase, i.e. n*down < (lastBase+1)*up.
    const lastBase = inputEnd - 1 - this.#halfTaps;
    const lastComplete = Math.ceil(((lastBase + 1) * up) / down) - 1;
    const count = Math.max(0, lastComplete - this.#nextOutput + 1);
    const out = new Float32Array(count);
    const history = this.#history;
    for (let i = 0; i < count; i++) {
      const pos = (this.#nextOutput + i) * down;
      const base = Math.floor(pos / up);
      const row = (pos - base * up) * numTaps;
      const first = base - this.#halfTaps + 1 - this.#historyStart; // index into history of tap 0
      let acc = 0;
      for (let j = 0; j < numTaps; j++) acc += this.#weights[row + j] * history[first + j];
      out[i] = acc;
    }
    this.#nextOutput += count;
    this.#dropConsumed();
    return out;
  }

  #append(input: Float32Array): void {
    this.#history = appendGrowing(this.#history, this.#historyLength, input, (n) => new Float32Array(n));
    this.#historyLength += input.length;
  }

  /** Drops input no future output's taps reach: everything before the next output's first tap. */
  #dropConsumed(): void {
    const firstNeeded = Math.floor((this.#nextOutput * this.#down) / this.#up) - this.#halfTaps + 1;
    const drop = firstNeeded - this.#historyStart;
    if (drop <= 0) return;
    this.#history.copyWithin(0, drop, this.#historyLength);
    this.#historyLength -= drop;
    this.#historyStart = firstNeeded;
  }
}
