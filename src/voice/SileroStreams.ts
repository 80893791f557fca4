/**
 * The VAD worker's streams: each stream's audio on its way to 16 kHz windows, its model context and state, and
 * the batching policy that runs every stream with a whole window ready in one model call.
 *
 * Round r of runReady() takes the r-th ready window of every stream that has one (a stream's windows must run
 * in order: window k+1 needs window k's state), at most maxBatch per call. At real-time pace every stream has
 * 0 or 1 window ready, so one call covers all of them.
 */
import {
  SILERO_CONTEXT_SAMPLES,
  SILERO_INPUT_SAMPLES,
  SILERO_RATE_HZ,
  SILERO_STATE_SIZE,
  SILERO_WINDOW_SAMPLES,
  type SileroBatch,
  type SileroOutput,
} from './sileroIo.ts';
import { SignalActivity } from './SignalActivity.ts';
import { StreamingResampler } from './StreamingResampler.ts';
import { appendGrowing } from '../common/arrays.ts';

export interface WindowRunner {
  run(batch: SileroBatch): Promise<SileroOutput>;
}

/** Probabilities of one stream's consecutive windows, all cut under one epoch, and their SignalActivity codes. */
export interface StreamWindows {
  readonly streamId: number;
  readonly epoch: number;
  readonly probs: number[];
  readonly activity: number[];
}

/** Audio a stream keeps for the end-of-turn model: the 8 s Smart Turn v3 looks at. */
const HISTORY_SAMPLES = 8 * SILERO_RATE_HZ;

class StreamAudio {
  readonly streamId: number;
  epoch: number;
  /** Bumped on reset: a model run that started before it must not write its state back. */
  generation = 0;
  readonly #resampler: StreamingResampler;
  #pending = new Float32Array(4 * SILERO_WINDOW_SAMPLES); // 16 kHz samples not yet in a window
  #pendingLength = 0;
  readonly context = new Float32Array(SILERO_CONTEXT_SAMPLES);
  readonly state = new Float32Array(SILERO_STATE_SIZE); // [2][128]
  readonly activity = new SignalActivity();
  /** The last HISTORY_SAMPLES of 16 kHz audio since the last reset, a ring, for the end-of-turn model. */
  readonly #history = new Float32Array(HISTORY_SAMPLES);
  #historyTotal = 0;

  constructor(streamId: number, epoch: number, inputRateHz: number) {
    this.streamId = streamId;
    this.epoch = epoch;
    this.#resampler = new StreamingResampler(inputRateHz, SILERO_RATE_HZ);
  }

  get windowsReady(): number {
    return Math.floor(this.#pendingLength / SILERO_WINDOW_SAMPLES);
  }

  append(pcm16: Int16Array): void {
    const input = new Float32Array(pcm16.length);
    for (let i = 0; i < pcm16.length; i++) input[i] = pcm16[i] / 32768;
    const resampled = this.#resampler.push(input);
    this.#pending = appendGrowing(this.#pending, this.#pendingLength, resampled, (n) => new Float32Array(n));
    this.#pendingLength += resampled.length;
    for (let i = Math.max(0, resampled.length - HISTORY_SAMPLES); i < resampled.length; i++)
      this.#history[(this.#historyTotal + i) % HISTORY_SAMPLES] = resampled[i];
    this.#historyTotal += resampled.length;
  }

  /** The audio from `fromMs` (since the last reset) to now, at most its last HISTORY_SAMPLES. */
  audioSince(fromMs: number): Float32Array {
    const total = this.#historyTotal;
    const from = Math.max(0, Math.round((fromMs * SILERO_RATE_HZ) / 1000), total - HISTORY_SAMPLES);
    const out = new Float32Array(Math.max(0, total - from));
    for (let i = 0; i < out.length; i++) out[i] = this.#history[(from + i) % HISTORY_SAMPLES];
    return out;
  }

  /** Writes the next window's model input (context, then 512 new samples) at dst[at..] and consumes it. */
  takeWindow(dst: Float32Array, at: number): void {
    dst.set(this.context, at);
    const window = this.#pending.subarray(0, SILERO_WINDOW_SAMPLES);
    dst.set(window, at + SILERO_CONTEXT_SAMPLES);
    this.context.set(window.subarray(SILERO_WINDOW_SAMPLES - SILERO_CONTEXT_SAMPLES));
    this.#pending.copyWithin(0, SILERO_WINDOW_SAMPLES, this.#pendingLength);
    this.#pendingLength -= SILERO_WINDOW_SAMPLES;
  }

  reset(epoch: number): void {
    this.epoch = epoch;
    this.generation++;
    this.#resampler.reset();
    this.#pendingLength = 0;
    this.context.fill(0);
    this.state.fill(0);
    this.activity.reset();
    this.#historyTotal = 0;
  }
}

export class SileroStreams {
  readonly #runner: WindowRunner;
  readonly #inputRateHz: number;
  readonly #maxBatch: number;
  readonly #streams = new Map<number, StreamAudio>();

  constructor(runner: WindowRunner, inputRateHz: number, maxBatch: number) {
    this.#runner = runner;
    this.#inputRateHz = inputRateHz;
    this.#maxBatch = maxBatch;
  }

  get size(): number {
    return this.#streams.size;
  }

  open(streamId: number, epoch: number): void {
    this.#streams.set(streamId, new StreamAudio(streamId, epoch, this.#inputRateHz));
  }

  /** Audio for a stream that is not open (closed while the audio was on its way) is dropped. */
  append(streamId: number, pcm16: Int16Array): void {
    this.#streams.get(streamId)?.append(pcm16);
  }

  reset(streamId: number, epoch: number): void {
    this.#streams.get(streamId)?.reset(epoch);
  }

  /** A stream's audio since `fromMs` after its last reset (at most 8 s) and its epoch; null if it is not open. */
  turnAudio(streamId: number, fromMs: number): { epoch: number; samples: Float32Array } | null {
    const stream = this.#streams.get(streamId);
    return stream ? { epoch: stream.epoch, samples: stream.audioSince(fromMs) } : null;
  }

  close(streamId: number): void {
    const stream = this.#streams.get(streamId);
    if (stream) stream.generation++; // a run in flight must not report for it
    this.#streams.delete(streamId);
  }

  /** Runs every whole window ready, batched; returns what they gave and the model time spent. */
  async runReady(): Promise<{ windows: StreamWindows[]; runs: number; runMs: number }> {
    const byStream = new Map<StreamAudio, StreamWindows>();
    const windows: StreamWindows[] = [];
    let runs = 0;
    let runMs = 0;
    for (;;) {
      // 1. This round: streams with a window ready, oldest-opened first (Map order), at most maxBatch.
      const round: StreamAudio[] = [];
      for (const stream of this.#streams.values()) {
        if (stream.windowsReady > 0) round.push(stream);
        if (round.length === this.#maxBatch) break;
      }
      if (round.length === 0) break; // nothing left whole: the rest waits for more audio
      // 2. Gather inputs and states into the model's layout.
      const size = round.length;
      const half = SILERO_STATE_SIZE / 2;
      const batch: SileroBatch = {
        size,
        input: new Float32Array(size * SILERO_INPUT_SAMPLES),
        state: new Float32Array(size * SILERO_STATE_SIZE),
      };
      const generations = round.map((stream, b) => {
        stream.takeWindow(batch.input, b * SILERO_INPUT_SAMPLES);
        batch.state.set(stream.state.subarray(0, half), b * half);
        batch.state.set(stream.state.subarray(half), (size + b) * half);
        return stream.generation;
      });
      const startedAt = performance.now();
      const out = await this.#runner.run(batch);
      runMs += performance.now() - startedAt;
      runs++;
      // 3. Scatter states and collect probabilities, skipping streams reset or closed while the run was out.
      round.forEach((stream, b) => {
        if (stream.generation !== generations[b]) return; // its window belonged to audio it has since forgotten
        stream.state.set(out.state.subarray(b * half, (b + 1) * half), 0);
        stream.state.set(out.state.subarray((size + b) * half, (size + b + 1) * half), half);
        let entry = byStream.get(stream);
        if (!entry || entry.epoch !== stream.epoch) {
          entry = { streamId: stream.streamId, epoch: stream.epoch, probs: [], activity: [] };
          byStream.set(stream, entry);
          windows.push(entry);
        }
        entry.probs.push(out.probs[b]);
        const samples = b * SILERO_INPUT_SAMPLES + SILERO_CONTEXT_SAMPLES;
        entry.activity.push(
          stream.activity.next(batch.input.subarray(samples, samples + SILERO_WINDOW_SAMPLES), out.probs[b]),
        );
      });
    }
    return { windows, runs, runMs };
  }
}
