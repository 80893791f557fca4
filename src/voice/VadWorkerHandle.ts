/**
 * The server thread's end of one VAD worker thread: starts it, waits for READY, sends it stream ops and audio,
 * and hands back what it reports. Light bookkeeping only; the model never runs on this thread.
 *
 * Ops are coalesced: everything sent during one event-loop turn goes out as one message at the turn's check
 * phase (setImmediate), or MIN_POST_INTERVAL_MS after the last message if that is later, so sessions whose audio
 * frames arrive together cost one postMessage and reach the model as one batch. Audio that completes no 32 ms
 * window is not sent on its own: it waits for the append that completes one (nothing could run on it before),
 * which is sent at once (at most MIN_POST_INTERVAL_MS later): no fixed timer stands between a window and its run.
 */
import { channel } from 'node:diagnostics_channel';
import { Worker } from 'node:worker_threads';
import { ChorusError, deserializeError, ErrorCodes } from '../common/errors.ts';
import { workerEntry } from '../common/moduleFile.ts';
import { onnxTelemetryOff } from '../common/onnxTelemetry.ts';
import { appendGrowing } from '../common/arrays.ts';
import {
  encodeOp,
  type EndOfTurnResult,
  type FromVadWorker,
  type StreamOp,
  type ToVadWorker,
  type VadWorkerData,
  type WindowResults,
} from './vadMessages.ts';

/**
 * VAD lifecycle events on diagnostics_channel (free without subscribers). Candidates for src/common/diagnostics.ts.
 * - windows: {worker, streams, windows, runs, runMs, latencyMs} per results message; latencyMs runs from the
 *   ops message that completed the windows leaving this thread to their probabilities arriving back.
 * - died: {worker, error} when a worker exits after READY without being asked to (it is replaced).
 */
/**
 * The least time between two ops messages to a worker. Posting costs this thread tens of microseconds each: 16
 * sessions whose 32 ms windows complete out of step would post ~500 times a second; this caps it at 250 and delays
 * a window by at most 4 ms (none for a session alone, whose windows are 32 ms apart).
 */
const MIN_POST_INTERVAL_MS = 4;

export const vadDiagnostics = {
  windows: channel('chorus:vad:windows'),
  died: channel('chorus:vad:died'),
  /** {streamId, probability, runMs} per end-of-turn model answer (semantic_vad). */
  endOfTurn: channel('chorus:vad:endOfTurn'),
};

export interface VadWorkerEvents {
  onWindows(results: WindowResults): void;
  onEndOfTurn(result: EndOfTurnResult): void;
  /** The worker exited after READY without being asked to. Not called for a bootstrap failure. */
  onDied(error: ChorusError): void;
}

const BOOT_URL = workerEntry('./vadWorkerBoot.mjs', './vadWorker', import.meta.url);

type State = 'starting' | 'ready' | 'failed' | 'closing' | 'exited';

export class VadWorkerHandle {
  readonly index: number;
  /** Streams assigned to this worker (VadService's balancing). */
  streamCount = 0;
  /** Resolves on READY; rejects with CHORUS_ERR_MODEL_LOAD if the worker fails or exits before it. */
  readonly ready: Promise<void>;
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #state: State = 'starting';
  #error: Error | null = null;
  /** Ops not sent yet, encoded (vadMessages.ts), and the audio they name, staged in one growing buffer. */
  #ops: number[] = [];
  #pcm = new Int16Array(16 * 1024);
  #pcmLength = 0;
  #flushScheduled = false;
  #lastPostAtMs = -Infinity;
  #seq = 0;
  readonly #sentAtMs = new Map<number, number>(); // seq -> performance.now() when posted
  /** The end-of-turn model's load, once asked for (loadTurnModel); settled by the worker's turnModel answer. */
  #turnModel: { promise: Promise<void>; resolve: () => void; reject: (err: Error) => void } | null = null;

  constructor(index: number, data: VadWorkerData, events: VadWorkerEvents) {
    this.index = index;
    onnxTelemetryOff(); // here, not in the thread: a worker's process.env is its own copy (see onnxTelemetry.ts)
    this.#worker = new Worker(BOOT_URL, { workerData: data, name: `chorus-vad-${index}` });
    let settle!: { resolve: () => void; reject: (err: Error) => void };
    this.ready = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    this.ready.catch(() => {}); // a caller that never awaits it must not see an unhandled rejection
    this.#exited = new Promise<void>((resolve) => this.#worker.once('exit', () => resolve()));

    this.#worker.on('message', (msg: FromVadWorker) => {
      switch (msg.type) {
        case 'ready':
          this.#state = 'ready';
          settle.resolve();
          this.#scheduleFlush(); // ops sent while it was starting (a replacement for a dead worker)
          return;
        case 'failed':
          this.#error = deserializeError(msg.error);
          return; // the worker exits next; 'exit' settles
        case 'windows':
          this.#onWindows(msg, events);
          return;
        case 'endOfTurn':
          events.onEndOfTurn(msg);
          return;
        case 'turnModel':
          if (msg.error === null) this.#turnModel?.resolve();
          else this.#turnModel?.reject(deserializeError(msg.error));
          return;
      }
    });
    this.#worker.on('error', (err) => {
      this.#error ??= err;
    });
    this.#worker.on('exit', (code) => {
      const was = this.#state;
      this.#state = 'exited';
      this.#ops = [];
      this.#pcmLength = 0;
      this.#turnModel?.reject(new ChorusError(ErrorCodes.STAGE_DIED, `VAD worker ${index} exited (code ${code})`));
      if (was === 'starting' || was === 'failed') {
        this.#state = 'failed';
        settle.reject(
          new ChorusError(ErrorCodes.MODEL_LOAD, `VAD worker ${index} failed to start (exit code ${code})`, {
            cause: this.#error ?? undefined,
          }),
        );
      } else if (was === 'ready') {
        events.onDied(
          new ChorusError(ErrorCodes.STAGE_DIED, `VAD worker ${index} exited (code ${code})`, {
            cause: this.#error ?? undefined,
          }),
        );
      }
    });
  }

  open(streamId: number, epoch: number): void {
    this.#enqueue({ op: 'open', streamId, epoch });
  }

  /** `completesWindow`: the worker can run a window once it has this audio (else it waits for more). */
  audio(streamId: number, pcm16: Int16Array, completesWindow = true): void {
    if (pcm16.length === 0 || !this.#accepting()) return;
    encodeOp(this.#ops, { op: 'audio', streamId, offset: this.#pcmLength, length: pcm16.length });
    // A copy: the caller may reuse its buffer once push() returns.
    this.#pcm = appendGrowing(this.#pcm, this.#pcmLength, pcm16, (n) => new Int16Array(n));
    this.#pcmLength += pcm16.length;
    if (completesWindow) this.#scheduleFlush();
  }

  reset(streamId: number, epoch: number): void {
    this.#enqueue({ op: 'reset', streamId, epoch });
  }

  /** Asks the end-of-turn model about the stream's turn from fromMs (after its last reset) on. */
  score(streamId: number, runId: number, fromMs: number): void {
    this.#enqueue({ op: 'score', streamId, runId, fromMs });
  }

  closeStream(streamId: number): void {
    this.#enqueue({ op: 'close', streamId });
  }

  /**
   * Loads the end-of-turn model in the worker (once: later calls get the same answer). Rejects with the worker's
   * reason when the file does not load; Silero keeps serving this worker's streams either way.
   */
  loadTurnModel(): Promise<void> {
    if (this.#turnModel) return this.#turnModel.promise;
    let settle!: { resolve: () => void; reject: (err: Error) => void };
    const promise = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    promise.catch(() => {}); // a caller that never awaits it must not see an unhandled rejection
    this.#turnModel = { promise, ...settle };
    this.ready.then(
      () => this.#post({ type: 'loadTurnModel' }),
      (err: Error) => settle.reject(err),
    );
    return promise;
  }

  /** Tests only: makes the worker throw from its message loop (the crash path). */
  crashForTest(): void {
    this.#post({ type: 'crashForTest' });
  }

  /**
   * Asks the worker to finish its run in progress, release the model and exit; resolves when it has exited.
   * Idempotent. Never terminate(): terminating a thread inside onnxruntime's run() aborts the whole process.
   */
  async shutdown(): Promise<void> {
    if (this.#state === 'starting') await this.ready.catch(() => {}); // create() is not interruptible either
    if (this.#state === 'ready') {
      this.#flush(); // audio already pushed still gets its answer if anyone is listening
      this.#post({ type: 'shutdown' });
      this.#state = 'closing';
    }
    await this.#exited;
  }

  #accepting(): boolean {
    return this.#state === 'starting' || this.#state === 'ready';
  }

  #enqueue(op: StreamOp): void {
    if (!this.#accepting()) return;
    encodeOp(this.#ops, op);
    this.#scheduleFlush();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled || this.#state !== 'ready' || this.#ops.length === 0) return;
    this.#flushScheduled = true;
    // At most one message per MIN_POST_INTERVAL_MS: one session's windows (every 32 ms) go at once; many sessions'
    // windows, which complete out of step, share a message instead of costing this thread a post each.
    const waitMs = this.#lastPostAtMs + MIN_POST_INTERVAL_MS - performance.now();
    if (waitMs <= 0) setImmediate(() => this.#flush());
    else setTimeout(() => this.#flush(), waitMs);
  }

  #flush(): void {
    this.#flushScheduled = false;
    if (this.#state !== 'ready' || this.#ops.length === 0) return;
    const pcm = this.#pcm.slice(0, this.#pcmLength);
    const ops = Int32Array.from(this.#ops);
    const seq = ++this.#seq;
    const msg: ToVadWorker = { type: 'ops', seq, ops, pcm };
    this.#ops = [];
    this.#pcmLength = 0;
    this.#lastPostAtMs = performance.now();
    this.#sentAtMs.set(seq, performance.now());
    this.#worker.postMessage(msg, [pcm.buffer, ops.buffer]);
  }

  #post(msg: ToVadWorker): void {
    if (this.#state === 'ready') this.#worker.postMessage(msg);
  }

  #onWindows(msg: WindowResults, events: VadWorkerEvents): void {
    const sentAtMs = this.#sentAtMs.get(msg.seq);
    for (const seq of this.#sentAtMs.keys()) {
      if (seq > msg.seq) break; // Map keeps insertion order: seqs ascend
      this.#sentAtMs.delete(seq);
    }
    if (vadDiagnostics.windows.hasSubscribers) {
      vadDiagnostics.windows.publish({
        worker: this.index,
        streams: msg.streamIds.length,
        windows: msg.probs.length,
        runs: msg.runs,
        runMs: msg.runMs,
        latencyMs: sentAtMs === undefined ? null : performance.now() - sentAtMs,
      });
    }
    events.onWindows(msg);
  }
}
