/**
 * One tiny forward at load time. It moves onnxruntime's first-run costs (kernel selection, arena
 * allocation) out of the first request, and a model that loads but cannot run fails at stage start-up
 * (before READY) with a clear error instead of failing its first request.
 */
import { GREEDY_SAMPLING, type SamplingParams } from '../../src/common/samplingParams.ts';
import { ChorusError, ErrorCodes, isChorusError } from '../../src/common/errors.ts';

export const WARMUP_SEQ = '__chorus_warmup__';

export const WARMUP_SAMPLING: SamplingParams = { ...GREEDY_SAMPLING, maxTokens: 2, ignoreEos: true };

export function warmUp(what: string, run: () => void): void {
  try {
    run();
  } catch (err) {
    if (isChorusError(err, ErrorCodes.MODEL_SIGNATURE)) throw err;
    throw new ChorusError(ErrorCodes.MODEL_LOAD, `${what} loads but fails a warm-up run: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
