/** How a promise settled, as an error code: 'resolved', or the ChorusError's code (anything else is rethrown). */
import { isChorusError, type ErrorCode } from '../../src/common/errors.ts';

export async function codeOf(p: Promise<unknown>): Promise<ErrorCode | 'resolved'> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    if (!isChorusError(err)) throw err;
    return err.code;
  }
}
