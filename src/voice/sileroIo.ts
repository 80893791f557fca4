/**
 * Silero VAD v5's window facts and batch layout, apart from SileroModel so that the server thread can use them
 * without loading onnxruntime-node (only VAD workers run the model). SileroModel.ts explains the I/O.
 */

export const SILERO_RATE_HZ = 16000;
export const SILERO_WINDOW_SAMPLES = 512; // 32 ms
export const SILERO_CONTEXT_SAMPLES = 64;
export const SILERO_INPUT_SAMPLES = SILERO_CONTEXT_SAMPLES + SILERO_WINDOW_SAMPLES;
/** Per stream: [2][128] (the batch axis sits in the middle of the model's [2, batch, 128]). */
export const SILERO_STATE_SIZE = 2 * 128;

export interface SileroBatch {
  readonly size: number;
  /** [size][SILERO_INPUT_SAMPLES]. */
  readonly input: Float32Array;
  /** [2][size][128], the model's layout. */
  readonly state: Float32Array;
}

export interface SileroOutput {
  /** [size]. */
  readonly probs: Float32Array;
  /** [2][size][128]. */
  readonly state: Float32Array;
}
