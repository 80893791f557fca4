/** Every "this media cannot be used" failure is CHORUS_ERR_MEDIA_INVALID, naming the item and what is wrong. */
import { ChorusError, ErrorCodes } from '../common/errors.ts';

export function mediaInvalid(what: string, problem: string, cause?: unknown): ChorusError {
  return new ChorusError(ErrorCodes.MEDIA_INVALID, `${what}: ${problem}`, cause === undefined ? undefined : { cause });
}
