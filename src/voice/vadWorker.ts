/**
 * A VAD worker thread: loads Silero VAD, posts `ready`, then applies ops messages and runs every window they
 * complete. The model runs here and never on the server thread (onnxruntime-node's run() is synchronous).
 * Smart Turn (semantic_vad's end-of-turn model) is loaded only when a loadTurnModel message asks for it: a file that
 * does not load is reported in the answer and costs the streams that never ask for it nothing.
 *
 * Ops that arrive together are all applied before the model runs (the run is deferred with setImmediate), so
 * audio from many streams lands in one batch. Shutdown waits for a run in progress: terminating a thread inside
 * run() aborts the whole process.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { serializeError, type SerializedError } from '../common/errors.ts';
import { SileroModel } from './SileroModel.ts';
import { SmartTurnModel } from './SmartTurnModel.ts';
import { SILERO_RATE_HZ, SILERO_WINDOW_SAMPLES } from './sileroIo.ts';
import { SileroStreams } from './SileroStreams.ts';
import {
  decodeOp,
  OP_WORDS,
  windowsMessage,
  windowsTransfer,
  type FromVadWorker,
  type StreamOp,
  type ToVadWorker,
  type VadWorkerData,
} from './vadMessages.ts';

function post(port: MessagePort, msg: FromVadWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(msg, transfer);
}

type ScoreOp = Extract<StreamOp, { op: 'score' }>;

function apply(streams: SileroStreams, op: StreamOp, pcm: Int16Array, scores: ScoreOp[]): void {
  switch (op.op) {
    case 'score':
      scores.push(op); // rated after this message's windows, on the audio appended before it
      return;
    case 'open':
      return streams.open(op.streamId, op.epoch);
    case 'audio':
      return streams.append(op.streamId, pcm.subarray(op.offset, op.offset + op.length));
    case 'reset':
      return streams.reset(op.streamId, op.epoch);
    case 'close':
      return streams.close(op.streamId);
  }
}

/** The end-of-turn model's answers to the score ops taken (their streams' audio as it is now). */
async function runScores(port: MessagePort, streams: SileroStreams, turnModel: SmartTurnModel | null, ops: ScoreOp[]) {
  for (const op of ops) {
    const turn = streams.turnAudio(op.streamId, op.fromMs);
    if (!turn || !turnModel) continue; // closed meanwhile; or no model (VadService sends no score op then)
    const startedAt = performance.now();
    const probability = await turnModel.score(turn.samples);
    const { streamId, runId } = op;
    const runMs = performance.now() - startedAt;
    post(port, { type: 'endOfTurn', streamId, epoch: turn.epoch, runId, probability, runMs });
  }
}

async function loadTurnModel(
  modelPath: string | null,
): Promise<{ loaded: SmartTurnModel | null; error: SerializedError | null }> {
  try {
    if (modelPath === null) throw new Error('this VAD service has no end-of-turn model file');
    return { loaded: await SmartTurnModel.load(modelPath), error: null };
  } catch (err) {
    return { loaded: null, error: serializeError(err) };
  }
}

/** The worker's loop: ops in, runs of the ready windows out, one run at a time, and the shutdown after the last. */
class VadWorkerLoop {
  readonly #port: MessagePort;
  readonly #model: SileroModel;
  readonly #data: VadWorkerData;
  readonly #streams: SileroStreams;
  #turnModel: SmartTurnModel | null = null;
  #turnModelLoading: Promise<void> | null = null;
  #scores: ScoreOp[] = [];
  #lastSeq = 0;
  #runScheduled = false;
  #running = false;
  #rerun = false; // ops arrived while a run was out (possible if run() ever resolves on a later turn)
  #shuttingDown = false;

  constructor(port: MessagePort, model: SileroModel, data: VadWorkerData) {
    this.#port = port;
    this.#model = model;
    this.#data = data;
    this.#streams = new SileroStreams(model, data.inputRateHz, data.maxBatch);
    port.on('message', (msg: ToVadWorker) => this.#onMessage(msg));
    post(port, { type: 'ready', windowSamples: SILERO_WINDOW_SAMPLES, modelRateHz: SILERO_RATE_HZ });
  }

  #onMessage(msg: ToVadWorker): void {
    switch (msg.type) {
      case 'ops':
        if (this.#shuttingDown) return;
        for (let at = 0; at < msg.ops.length; at += OP_WORDS)
          apply(this.#streams, decodeOp(msg.ops, at), msg.pcm, this.#scores);
        this.#lastSeq = msg.seq;
        // One runReady() at a time: a stream's windows must run in order, each on the state of the last.
        if (this.#running) this.#rerun = true;
        else this.#schedule();
        return;
      case 'shutdown':
        if (this.#shuttingDown) return;
        this.#shuttingDown = true;
        // A scheduled or running runReady() finishes the shutdown when it returns.
        if (!this.#runScheduled && !this.#running) void this.#finish();
        return;
      case 'loadTurnModel':
        if (this.#shuttingDown || this.#turnModelLoading) return; // asked once per worker (VadService)
        this.#turnModelLoading = loadTurnModel(this.#data.turnModelPath).then(({ loaded, error }) => {
          this.#turnModel = loaded;
          post(this.#port, { type: 'turnModel', error });
        });
        return;
      case 'crashForTest':
        throw new Error('VAD worker crash requested by a test');
    }
  }

  #schedule(): void {
    if (this.#runScheduled) return;
    this.#runScheduled = true;
    setImmediate(() => void this.#runReady());
  }

  async #runReady(): Promise<void> {
    this.#runScheduled = false;
    this.#running = true;
    const seq = this.#lastSeq;
    const run = await this.#streams.runReady();
    this.#running = false;
    if (run.windows.length > 0) {
      const msg = windowsMessage(seq, run);
      post(this.#port, msg, windowsTransfer(msg));
    }
    if (this.#scores.length > 0) {
      const taken = this.#scores;
      this.#scores = [];
      this.#running = true;
      await this.#turnModelLoading; // a score op sent after loadTurnModel is rated by the model it asked for
      await runScores(this.#port, this.#streams, this.#turnModel, taken);
      this.#running = false;
    }
    if (this.#shuttingDown) await this.#finish();
    else if (this.#rerun) {
      this.#rerun = false;
      this.#schedule();
    }
  }

  async #finish(): Promise<void> {
    await this.#turnModelLoading;
    await this.#model.release();
    await this.#turnModel?.release();
    this.#port.close(); // nothing else holds the thread's loop: it exits
  }
}

const port = parentPort;
if (!port) throw new Error('vadWorker.ts runs as a worker thread (started by VadService)');
const data = workerData as VadWorkerData;
try {
  new VadWorkerLoop(port, await SileroModel.load(data.modelPath), data);
} catch (err) {
  // No listener holds the port, so once this message is out the thread has nothing left to do and exits.
  post(port, { type: 'failed', error: serializeError(err) });
}
