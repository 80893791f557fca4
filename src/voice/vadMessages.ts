/**
 * Every message between VadService (server thread) and a VAD worker thread, as discriminated unions. They cross
 * by postMessage (structured clone), so typed arrays keep their type; audio travels as one transferred
 * Int16Array per message, each op naming its slice.
 */
import type { SerializedError } from '../common/errors.ts';
import type { StreamWindows } from './SileroStreams.ts';

/** workerData of a VAD worker. */
export interface VadWorkerData {
  readonly modelPath: string;
  /**
   * Smart Turn v3's ONNX file for semantic_vad (SmartTurnModel.ts); null: none, no score op is sent. Loaded only when
   * a loadTurnModel message asks (the first stream that needs it), so a bad file never stops Silero.
   */
  readonly turnModelPath: string | null;
  /** Most windows in one model run. */
  readonly maxBatch: number;
  /** Input audio rate (the Realtime API's pcm16: 24 kHz). */
  readonly inputRateHz: number;
}

/** One stream's step, applied in order. Ops of a stream arrive in the order its methods were called. */
export type StreamOp =
  | { readonly op: 'open'; readonly streamId: number; readonly epoch: number }
  /** Input samples pcm[offset, offset + length) of the carrying message. */
  | { readonly op: 'audio'; readonly streamId: number; readonly offset: number; readonly length: number }
  /** Forget the stream's audio and model state; its windows restart at 0 under `epoch`. */
  | { readonly op: 'reset'; readonly streamId: number; readonly epoch: number }
  | { readonly op: 'close'; readonly streamId: number }
  /** Rate the stream's turn (its audio from fromMs after its last reset) with the end-of-turn model. */
  | { readonly op: 'score'; readonly streamId: number; readonly runId: number; readonly fromMs: number };

/**
 * Ops travel as OP_WORDS int32 words each ([code, streamId, a, b]: open/reset a = epoch; audio a = offset,
 * b = length; score a = runId, b = fromMs), a transferred Int32Array: a message of many sessions' appends then
 * clones no objects.
 */
export const OP_WORDS = 4;
const OP_CODES = { open: 0, audio: 1, reset: 2, close: 3, score: 4 } as const;

export function encodeOp(words: number[], op: StreamOp): void {
  switch (op.op) {
    case 'open':
    case 'reset':
      words.push(OP_CODES[op.op], op.streamId, op.epoch, 0);
      return;
    case 'audio':
      words.push(OP_CODES.audio, op.streamId, op.offset, op.length);
      return;
    case 'close':
      words.push(OP_CODES.close, op.streamId, 0, 0);
      return;
    case 'score':
      words.push(OP_CODES.score, op.streamId, op.runId, op.fromMs);
  }
}

/** The op at words[at..at + OP_WORDS). */
export function decodeOp(words: Int32Array, at: number): StreamOp {
  const [code, streamId, a, b] = words.subarray(at, at + OP_WORDS);
  switch (code) {
    case OP_CODES.open:
      return { op: 'open', streamId, epoch: a };
    case OP_CODES.audio:
      return { op: 'audio', streamId, offset: a, length: b };
    case OP_CODES.reset:
      return { op: 'reset', streamId, epoch: a };
    case OP_CODES.close:
      return { op: 'close', streamId };
    case OP_CODES.score:
      return { op: 'score', streamId, runId: a, fromMs: b };
    default:
      throw new Error(`unknown VAD op code ${code}`);
  }
}

export type ToVadWorker =
  /** `seq` counts ops messages (1, 2, ...); results name the newest one applied, for latency. */
  | { readonly type: 'ops'; readonly seq: number; readonly ops: Int32Array; readonly pcm: Int16Array }
  /** Finish the run in progress, release the model, and exit. Never terminate() a worker instead: terminating
   * a thread inside onnxruntime's run() or create() aborts the whole process. */
  | { readonly type: 'shutdown' }
  /** Load the end-of-turn model (workerData.turnModelPath) now; answered by a turnModel message. */
  | { readonly type: 'loadTurnModel' }
  /** Tests only: throw from the message loop, as a bug in the worker would (the crash path). */
  | { readonly type: 'crashForTest' };

/** Probabilities of consecutive windows, per stream: stream i's are probs[first_i, first_i + counts[i]). */
export interface WindowResults {
  readonly type: 'windows';
  readonly seq: number;
  readonly streamIds: Int32Array;
  /** The stream's epoch when its windows were cut: results of an older epoch are dropped. */
  readonly epochs: Int32Array;
  readonly counts: Int32Array;
  readonly probs: Float32Array;
  /** Per window, parallel to probs: where its signal stops being louder than the room (SignalActivity.ts). */
  readonly activity: Uint8Array;
  /** Model runs and the time they took, for the latency report. */
  readonly runs: number;
  readonly runMs: number;
}

/** What one SileroStreams.runReady() ran. */
interface ReadyRun {
  readonly windows: readonly StreamWindows[];
  readonly runs: number;
  readonly runMs: number;
}

/** A run's windows as one message, packed into typed arrays that are transferred, not copied (windowsTransfer). */
export function windowsMessage(seq: number, run: ReadyRun): WindowResults {
  const { windows, runs, runMs } = run;
  const probs = new Float32Array(windows.reduce((n, w) => n + w.probs.length, 0));
  const activity = new Uint8Array(probs.length);
  let at = 0;
  for (const w of windows) {
    probs.set(w.probs, at);
    activity.set(w.activity, at);
    at += w.probs.length;
  }
  return {
    type: 'windows',
    seq,
    streamIds: Int32Array.from(windows, (w) => w.streamId),
    epochs: Int32Array.from(windows, (w) => w.epoch),
    counts: Int32Array.from(windows, (w) => w.probs.length),
    probs,
    activity,
    runs,
    runMs,
  };
}

/** What a windows message hands over with it (the arrays are the worker's no longer). */
export function windowsTransfer(msg: WindowResults): ArrayBuffer[] {
  return [msg.streamIds, msg.epochs, msg.counts, msg.probs, msg.activity].map((a) => a.buffer as ArrayBuffer);
}

/** The end-of-turn model's answer to a score op. */
export interface EndOfTurnResult {
  readonly type: 'endOfTurn';
  readonly streamId: number;
  /** The stream's epoch when its audio was taken: a result of an older epoch is dropped. */
  readonly epoch: number;
  readonly runId: number;
  /** P(the turn is complete). */
  readonly probability: number;
  /** Features and model run, ms. */
  readonly runMs: number;
}

export type FromVadWorker =
  /** The model is loaded: its window facts, as the worker resolved them. */
  | { readonly type: 'ready'; readonly windowSamples: number; readonly modelRateHz: number }
  /** Bootstrap failed (before ready): the worker exits after sending it. */
  | { readonly type: 'failed'; readonly error: SerializedError }
  /** The answer to loadTurnModel: null when the model is loaded, else why not (Silero keeps serving either way). */
  | { readonly type: 'turnModel'; readonly error: SerializedError | null }
  | WindowResults
  | EndOfTurnResult;
