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
  type FromVadWorker,
  type StreamOp,
  type ToVadWorker,
  type VadWorkerData,
  type WindowResults,
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

function resultsMessage(seq: number, run: Awaited<ReturnType<SileroStreams['runReady']>>): WindowResults {
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

function serve(port: MessagePort, model: SileroModel, data: VadWorkerData): void {
  let turnModel: SmartTurnModel | null = null;
  let turnModelLoading: Promise<void> | null = null;
  const streams = new SileroStreams(model, data.inputRateHz, data.maxBatch);
  let scores: ScoreOp[] = [];
  let lastSeq = 0;
  let runScheduled = false;
  let running = false;
  let rerun = false; // ops arrived while a run was out (possible if run() ever resolves on a later turn)
  let shuttingDown = false;

  const schedule = () => {
    if (runScheduled) return;
    runScheduled = true;
    setImmediate(() => void runReady());
  };

  const finish = async () => {
    await turnModelLoading;
    await model.release();
    await turnModel?.release();
    port.close(); // nothing else holds the thread's loop: it exits
  };

  const runReady = async () => {
    runScheduled = false;
    running = true;
    const seq = lastSeq;
    const run = await streams.runReady();
    running = false;
    if (run.windows.length > 0) {
      const msg = resultsMessage(seq, run);
      post(port, msg, [
        msg.streamIds.buffer,
        msg.epochs.buffer,
        msg.counts.buffer,
        msg.probs.buffer,
        msg.activity.buffer,
      ] as ArrayBuffer[]);
    }
    if (scores.length > 0) {
      const taken = scores;
      scores = [];
      running = true;
      await turnModelLoading; // a score op sent after loadTurnModel is rated by the model it asked for
      await runScores(port, streams, turnModel, taken);
      running = false;
    }
    if (shuttingDown) await finish();
    else if (rerun) {
      rerun = false;
      schedule();
    }
  };

  port.on('message', (msg: ToVadWorker) => {
    switch (msg.type) {
      case 'ops':
        if (shuttingDown) return;
        for (let at = 0; at < msg.ops.length; at += OP_WORDS) apply(streams, decodeOp(msg.ops, at), msg.pcm, scores);
        lastSeq = msg.seq;
        // One runReady() at a time: a stream's windows must run in order, each on the state of the last.
        if (running) rerun = true;
        else schedule();
        return;
      case 'shutdown':
        if (shuttingDown) return;
        shuttingDown = true;
        // A scheduled or running runReady() finishes the shutdown when it returns.
        if (!runScheduled && !running) void finish();
        return;
      case 'loadTurnModel':
        if (shuttingDown || turnModelLoading) return; // asked once per worker (VadService)
        turnModelLoading = loadTurnModel(data.turnModelPath).then(({ loaded, error }) => {
          turnModel = loaded;
          post(port, { type: 'turnModel', error });
        });
        return;
      case 'crashForTest':
        throw new Error('VAD worker crash requested by a test');
    }
  });
  post(port, { type: 'ready', windowSamples: SILERO_WINDOW_SAMPLES, modelRateHz: SILERO_RATE_HZ });
}

const port = parentPort;
if (!port) throw new Error('vadWorker.ts runs as a worker thread (started by VadService)');
const data = workerData as VadWorkerData;
try {
  serve(port, await SileroModel.load(data.modelPath), data);
} catch (err) {
  // No listener holds the port, so once this message is out the thread has nothing left to do and exits.
  post(port, { type: 'failed', error: serializeError(err) });
}
