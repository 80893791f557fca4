/**
 * A token as OpenAI's logprobs show it: its text and its UTF-8 bytes. A byte-level token that is part of a
 * multi-byte character has its own bytes (the text then holds U+FFFD for them); other tokenizers decode the
 * token alone (a special token as its marker text).
 */
import { TextDecoder } from 'node:util';
import type { TextLogprob, TokenText } from '../common/engine.ts';
import type { TokenLogprobs } from '../common/payloads.ts';
import { isByteLevel, type Tokenizer } from './Tokenizer.ts';

const lossy = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export function tokenText(tokenizer: Tokenizer, id: number, logprob: number): TokenText {
  const bytes =
    isByteLevel(tokenizer) && !tokenizer.isSpecialToken(id)
      ? tokenizer.tokenBytes(id)
      : Buffer.from(tokenizer.decode([id]), 'utf8');
  return { token: lossy.decode(bytes), bytes: Array.from(bytes), logprob };
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
