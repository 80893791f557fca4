/**
 * Token ids in, text deltas out, one token at a time, never emitting U+FFFD for a character whose bytes
 * are split across tokens (an emoji is 4 bytes; a byte-level model may emit them one per token).
 *
 * Two strategies:
 * - byte mode (ByteLevelTokenizer): token bytes go through a streaming TextDecoder, which holds back an
 *   incomplete UTF-8 sequence and emits U+FFFD exactly when a sequence can no longer become valid.
 * - decode mode (any tokenizer, e.g. HfTokenizer): vLLM's incremental detokenizer — re-decode a short
 *   window of recent tokens (its prefix offset..end), keeping a few already-emitted tokens as context so that
 *   decoders which treat the first token specially (SentencePiece's leading space) decode it as mid-text,
 *   and emit what the window adds beyond the text already emitted. Only the window's last character may
 *   still change (an incomplete sequence decodes to one trailing U+FFFD), so all but that is emitted.
 */
import { TextDecoder } from 'node:util';
import type { Tokenizer } from './Tokenizer.ts';
import { isByteLevel } from './Tokenizer.ts';

const REPLACEMENT = '\uFFFD';
/** Prompt tokens kept as decode context in decode mode (vLLM keeps 5 for the same reason). */
const CONTEXT_TOKENS = 5;
/**
 * In decode mode, a window still ending in U+FFFD after this many tokens is a stream of invalid bytes
 * (a real character needs at most 4 tokens of >= 1 byte each): emit it and slide, so the per-token cost
 * stays bounded instead of growing with the garbage.
 */
const MAX_HELD_TOKENS = 32;

export interface StreamingDetokenizerOptions {
  /** Leave special tokens (end-of-text, chat markers) out of the text. Default true. */
  readonly skipSpecialTokens?: boolean;
  /** The prompt, whose last tokens give the first generated token its decode context (decode mode). */
  readonly promptIds?: readonly number[];
}

export class StreamingDetokenizer {
  readonly #tokenizer: Tokenizer;
  readonly #skipSpecial: boolean;
  readonly #byteDecoder: TextDecoder | null;
  // decode mode: #ids is the window: already-emitted context, then (from #readOffset) the newer tokens.
  #ids: number[] = [];
  #readOffset = 0;
  /** Characters of decode(window) already emitted. */
  #emitted = 0;

  constructor(tokenizer: Tokenizer, options: StreamingDetokenizerOptions = {}) {
    this.#tokenizer = tokenizer;
    this.#skipSpecial = options.skipSpecialTokens ?? true;
    this.#byteDecoder = isByteLevel(tokenizer) ? new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }) : null;
    if (!this.#byteDecoder && options.promptIds?.length) {
      this.#ids = options.promptIds.slice(-CONTEXT_TOKENS);
      this.#readOffset = this.#ids.length;
      this.#emitted = this.#decodeWindow().length;
    }
  }

  /** The text that token `id` makes safe to show now ('' while a character is incomplete). */
  push(id: number): string {
    const tokenizer = this.#tokenizer;
    if (this.#byteDecoder && isByteLevel(tokenizer)) {
      if (tokenizer.isSpecialToken(id)) {
        if (this.#skipSpecial) return '';
        // A marker ends whatever partial character came before it.
        return this.#byteDecoder.decode() + tokenizer.decode([id]);
      }
      return this.#byteDecoder.decode(tokenizer.tokenBytes(id), { stream: true });
    }
    return this.#pushDecoded(id);
  }

  /** Everything still held back; a dangling partial character comes out as U+FFFD. Resets the stream. */
  flush(): string {
    if (this.#byteDecoder) return this.#byteDecoder.decode();
    const rest = this.#decodeWindow().slice(this.#emitted);
    this.#ids = [];
    this.#readOffset = this.#emitted = 0;
    return rest;
  }

  #pushDecoded(id: number): string {
    this.#ids.push(id);
    const full = this.#decodeWindow();
    const incomplete = full.endsWith(REPLACEMENT);
    const stable = incomplete ? full.slice(0, -1) : full;
    let delta = '';
    if (stable.length > this.#emitted) {
      delta = stable.slice(this.#emitted);
      this.#emitted = stable.length;
    }
    const held = this.#ids.length - this.#readOffset;
    if (!incomplete || held > MAX_HELD_TOKENS) {
      if (incomplete) delta += full.slice(this.#emitted);
      this.#slide();
    }
    return delta;
  }

  /** Everything decoded so far is emitted: the tokens just emitted become the next window's context. */
  #slide(): void {
    this.#ids = this.#ids.slice(this.#readOffset);
    this.#readOffset = this.#ids.length;
    this.#emitted = this.#decodeWindow().length;
  }

  #decodeWindow(): string {
    return this.#tokenizer.decode(this.#ids, { skipSpecialTokens: this.#skipSpecial });
  }
}
