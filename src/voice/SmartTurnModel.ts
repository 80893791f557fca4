/**
 * Smart Turn v3 (pipecat-ai's end-of-turn model, BSD-2; ONNX, a Whisper-tiny-sized encoder with a classifier head) on
 * onnxruntime-node: the last up-to-8 s of a turn's 16 kHz audio in, P(the speaker finished their turn) out.
 *
 * Its input is Whisper's log-mel of exactly 8 s: the audio's end kept, zeros in front of a shorter turn, the whole
 * window normalised to zero mean and unit variance first, then src/media/logMel.ts with Whisper's own clamp (the
 * window's loudest value - 8): input_features float32 [1, 80, 800] -> logits [1, 1] (already a sigmoid probability).
 *
 * Measured on this machine (2 cores, load ~4): features ~16 ms, the run ~40-80 ms with one thread. That is far past
 * a few ms, so it runs in the VAD worker thread beside Silero (vadWorker.ts), never on the server thread.
 */
import * as ort from 'onnxruntime-node';
import { onnxTelemetryOff } from '../common/onnxTelemetry.ts';
import { logMelSpectrogram, MEL_HOP_SAMPLES, MEL_NUM_BINS } from '../media/logMel.ts';
import { VAD_WORKER_SESSION_OPTIONS } from './SileroModel.ts';

export const SMART_TURN_RATE_HZ = 16000;
export const SMART_TURN_SAMPLES = 8 * SMART_TURN_RATE_HZ; // 8 s
const FRAMES = SMART_TURN_SAMPLES / MEL_HOP_SAMPLES; // 800
const NORM_EPS = 1e-7;

/** The model's input window: the audio's last 8 s, zero-padded in front, normalised (zero mean, unit variance). */
export function smartTurnWindow(samples16k: Float32Array): Float32Array {
  const window = new Float32Array(SMART_TURN_SAMPLES);
  const n = Math.min(samples16k.length, SMART_TURN_SAMPLES);
  window.set(samples16k.subarray(samples16k.length - n), SMART_TURN_SAMPLES - n);
  let mean = 0;
  for (const v of window) mean += v;
  mean /= window.length;
  let variance = 0;
  for (const v of window) variance += (v - mean) ** 2;
  variance /= window.length;
  const scale = 1 / Math.sqrt(variance + NORM_EPS);
  for (let i = 0; i < window.length; i++) window[i] = (window[i] - mean) * scale;
  return window;
}

export class SmartTurnModel {
  private constructor(private readonly session: ort.InferenceSession) {}

  static async load(modelPath: string): Promise<SmartTurnModel> {
    // It shares the VAD worker's core with Silero: the same one-thread, no-spinning session.
    onnxTelemetryOff();
    const session = await ort.InferenceSession.create(modelPath, VAD_WORKER_SESSION_OPTIONS);
    if (!session.inputNames.includes('input_features') || session.outputNames.length !== 1) {
      await session.release();
      throw new Error(
        `${modelPath} is not Smart Turn v3: inputs [${session.inputNames.join(', ')}] (expected input_features ` +
          `[batch, ${MEL_NUM_BINS}, ${FRAMES}] and one output)`,
      );
    }
    return new SmartTurnModel(session);
  }

  /** P(complete) for a turn's 16 kHz audio (its last 8 s count). */
  async score(samples16k: Float32Array): Promise<number> {
    const { mel, numFrames } = logMelSpectrogram(smartTurnWindow(samples16k), 'clip');
    const out = await this.session.run({
      input_features: new ort.Tensor('float32', mel, [1, MEL_NUM_BINS, numFrames]),
    });
    return (out[this.session.outputNames[0]].data as Float32Array)[0];
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
