/**
 * One tiny forward at load time. It moves onnxruntime's first-run costs (kernel selection, arena
 * allocation) out of the first request, and a model that loads but cannot run fails at stage start-up
 * (before READY) with a clear error instead of failing its first request.
 */
import type { SamplingParams } from '../../src/config/types.ts';
import { ChorusError, ErrorCodes, isChorusError } from '../../src/errors.ts';

export const WARMUP_SEQ = '__chorus_warmup__';

export const WARMUP_SAMPLING: SamplingParams = {
  temperature: 0,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  seed: 0,
  maxTokens: 2,
  stopTokenIds: [],
  ignoreEos: true,
};

export function warmUp(what: string, run: () => void): void {
  try {
    run();
  } catch (err) {
    if (isChorusError(err, ErrorCodes.MODEL_SIGNATURE)) throw err;
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `${what} loads but fails a warm-up run: ${(err as Error).message}`, { cause: err });
  }
}
