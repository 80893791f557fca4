/**
 * A token as OpenAI's logprobs show it: its text and its UTF-8 bytes. A byte-level token that is part of a
 * multi-byte character has its own bytes (the text then holds U+FFFD for them), read from the tokenizer's bytes
 * (ByteTokenizer) or its vocabulary string (tokenizer.json's byte-level or byte-fallback writing); a raw-text
 * vocabulary's tokens and special tokens are decoded alone (a special token as its marker text).
 */
import { TextDecoder } from 'node:util';
import type { TextLogprob, TokenText } from '../common/engine.ts';
import type { TokenLogprobs } from '../common/payloads.ts';
import type { HfTokenizer } from './HfTokenizer.ts';
import { isByteLevel, type Tokenizer } from './Tokenizer.ts';

const lossy = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export function tokenText(tokenizer: Tokenizer, id: number, logprob: number): TokenText {
  const own =
    isByteLevel(tokenizer) && !tokenizer.isSpecialToken(id) ? tokenizer.tokenBytes(id) : piecesOf(tokenizer, id);
  const bytes = own ?? Buffer.from(tokenizer.decode([id]), 'utf8');
  return { token: lossy.decode(bytes), bytes: Array.from(bytes), logprob };
}

/** A tokenizer.json token's bytes from its vocabulary string (HfTokenizer.pieceBytes), where it has them. */
function piecesOf(tokenizer: Tokenizer, id: number): Uint8Array | null {
  const withPieces = tokenizer as Partial<Pick<HfTokenizer, 'pieceBytes'>>;
  return typeof withPieces.pieceBytes === 'function' ? withPieces.pieceBytes(id) : null;
}

/** The Thinker's logprobs of `tokenIds` (one each) as text. */
export function textLogprobs(
  tokenizer: Tokenizer,
  tokenIds: readonly number[],
  logprobs: readonly TokenLogprobs[],
): TextLogprob[] {
  return tokenIds.map((id, i) => ({
    ...tokenText(tokenizer, id, logprobs[i].logprob),
    top: logprobs[i].top.map((t) => tokenText(tokenizer, t.id, t.logprob)),
  }));
}
