/**
 * Silero VAD v5 (ONNX) on onnxruntime-node: a batch of 32 ms windows in, one speech probability per window out.
 * Mechanism only: which windows run together is the caller's business (SileroStreams).
 *
 * v5 I/O at 16 kHz: input float32 [batch, 64 + 512] (the last 64 samples of the stream's previous window, then
 * 512 new ones), state float32 [2, batch, 128] (carried from stateN), sr int64 scalar -> output [batch, 1],
 * stateN [2, batch, 128]. The 64-sample context is what the official OnnxWrapper (silero_vad utils_vad.py)
 * prepends; without it the graph sees a seam at every window and its probabilities sag mid-word (measured on
 * espeak-ng speech: minima of 0.06-0.4 inside a phrase without context, 1.00 with it).
 *
 * onnxruntime-node's run() is synchronous on the calling thread: only a VAD worker may hold a SileroModel.
 */
import * as ort from 'onnxruntime-node';
import { onnxTelemetryOff } from '../common/onnxTelemetry.ts';
import {
  SILERO_INPUT_SAMPLES,
  SILERO_RATE_HZ,
  SILERO_STATE_SIZE,
  type SileroBatch,
  type SileroOutput,
} from './sileroIo.ts';

/**
 * The sessions of a VAD worker's models (Silero, Smart Turn): one core per worker; several workers or other models may
 * share the machine, and spinning threads that share cores are the worst case measured (5-10x slower).
 */
export const VAD_WORKER_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = {
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
  executionMode: 'sequential',
  graphOptimizationLevel: 'all',
  extra: { session: { intra_op: { allow_spinning: '0' } } },
};

export class SileroModel {
  readonly #session: ort.InferenceSession;
  readonly #sampleRate = new ort.Tensor('int64', BigInt64Array.from([BigInt(SILERO_RATE_HZ)]), []);

  private constructor(session: ort.InferenceSession) {
    this.#session = session;
  }

  static async load(modelPath: string): Promise<SileroModel> {
    onnxTelemetryOff();
    const session = await ort.InferenceSession.create(modelPath, VAD_WORKER_SESSION_OPTIONS);
    const want = ['input', 'state', 'sr'];
    if (want.some((name) => !session.inputNames.includes(name)) || !session.outputNames.includes('stateN')) {
      await session.release();
      throw new Error(
        `${modelPath} is not a Silero VAD v5 graph: inputs [${session.inputNames.join(', ')}], ` +
          `outputs [${session.outputNames.join(', ')}] (expected inputs input, state, sr and outputs output, stateN)`,
      );
    }
    return new SileroModel(session);
  }

  async run(batch: SileroBatch): Promise<SileroOutput> {
    const { size, input, state } = batch;
    const out = await this.#session.run({
      input: new ort.Tensor('float32', input, [size, SILERO_INPUT_SAMPLES]),
      state: new ort.Tensor('float32', state, [2, size, SILERO_STATE_SIZE / 2]),
      sr: this.#sampleRate,
    });
    return { probs: out.output.data as Float32Array, state: out.stateN.data as Float32Array };
  }

  async release(): Promise<void> {
    await this.#session.release();
  }
}
