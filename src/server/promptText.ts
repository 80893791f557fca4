/**
 * Front-end checks of prompt text against the byte bound (src/common/promptBytes.ts), made where the text arrives so
 * the error names the field at fault (`messages`, `session.instructions`, `item`). The engine checks the whole prompt
 * again before tokenizing: these only answer sooner and more precisely.
 */
import { ErrorCodes } from '../common/errors.ts';
import { contextLengthMessage, promptByteLimit } from '../common/promptBytes.ts';
import type { TokenLimits } from './generationParams.ts';
import { ClientInputError } from './validate.ts';

/** Throws CHORUS_ERR_CONTEXT_LENGTH_EXCEEDED (400, context_length_exceeded) when `bytes` of text cannot fit. */
export function refuseLongText(
  bytes: number,
  limits: TokenLimits,
  at: { readonly what: string; readonly param: string; readonly fix: string },
): void {
  if (bytes <= promptByteLimit(limits.promptPositions)) return;
  throw new ClientInputError(
    contextLengthMessage(at.what, bytes, limits.promptPositions, at.fix),
    at.param,
    ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
  );
}

/** UTF-8 bytes of the text of chat content: a string, or the text parts of a list (null: none). */
export function contentTextBytes(content: string | readonly { readonly text?: string }[] | null): number {
  if (content === null) return 0;
  if (typeof content === 'string') return Buffer.byteLength(content, 'utf8');
  let bytes = 0;
  for (const part of content) if (part.text !== undefined) bytes += Buffer.byteLength(part.text, 'utf8');
  return bytes;
}
