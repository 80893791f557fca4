/**
 * The byte bound on a prompt's text, checked before the text is tokenized. Tokenizing runs on main's event loop:
 * without a bound, one 14 MiB chat body stopped every stream and /health for 14 s. A prompt whose text is over
 * (Thinker positions x BYTES_PER_POSITION) bytes cannot fit, whatever the tokenizer: real text averages 3-5 bytes a
 * token, so 16 refuses nothing that would have fit, and keeps the longest prompt tokenized on the loop to a few
 * tens of milliseconds (64 KiB for the tiny preset's 4096 positions).
 */
import type { ChatMessage } from './engine.ts';
import { ChorusError, ErrorCodes } from './errors.ts';

export const BYTES_PER_POSITION = 16;

/** A model file does not say its positions (the ONNX graph's are symbolic): Qwen2.5-Omni's Thinker has 32768. */
export const FILE_MODEL_POSITIONS = 32768;

/** The positions the byte bound assumes: the entry model's when the config says them, else a file model's. */
export function boundPositions(maxPositions: number | undefined): number {
  return maxPositions ?? FILE_MODEL_POSITIONS;
}

export function promptByteLimit(positions: number): number {
  return positions * BYTES_PER_POSITION;
}

/** UTF-8 bytes of the text in messages (media parts take positions of their own, checked after probing). */
export function textBytes(messages: readonly ChatMessage[]): number {
  let bytes = 0;
  for (const m of messages) {
    if (typeof m.content === 'string') bytes += Buffer.byteLength(m.content, 'utf8');
    else for (const part of m.content) if (part.type === 'text') bytes += Buffer.byteLength(part.text, 'utf8');
  }
  return bytes;
}

/**
 * The message for text that cannot fit a context of `positions`: `what` names the text ("the prompt's text",
 * "session.instructions"), `fix` says what the client can do instead.
 */
export function contextLengthMessage(what: string, bytes: number, positions: number, fix: string): string {
  return (
    `${what} is ${bytes} bytes; this model's context is ${positions} positions, so text over ` +
    `${promptByteLimit(positions)} bytes (${BYTES_PER_POSITION} a position) cannot fit and is refused before ` +
    `tokenizing: ${fix}`
  );
}

/** Throws CHORUS_ERR_CONTEXT_LENGTH_EXCEEDED when the messages' text is over the bound of a context of `positions`. */
export function checkPromptBytes(messages: readonly ChatMessage[], positions: number): void {
  const bytes = textBytes(messages);
  if (bytes > promptByteLimit(positions)) {
    const message = contextLengthMessage("the prompt's text", bytes, positions, 'send shorter or fewer messages');
    throw new ChorusError(ErrorCodes.CONTEXT_LENGTH_EXCEEDED, message);
  }
}
