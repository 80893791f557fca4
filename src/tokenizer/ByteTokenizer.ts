/**
 * The tokenizer of the generated tiny-omni models. Layout (shared with the generated Thinker's logit bias
 * in stages/models): ids 0..255 are raw bytes; 16 specials follow, end-of-text first; every id after that
 * is a whole word with a leading space (GPT style), so a random model's greedy output reads as words.
 * Any text round-trips: what no word covers is spelled out in bytes.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { chatMlIds, TurnEncodings, type ByteLevelTokenizer, type ChatTurn, type DecodeOptions } from './Tokenizer.ts';
import { COMMON_WORDS } from './words.ts';
import type { ToolDefinition } from '../common/engine.ts';
import { toolTurns } from './toolTurns.ts';

export const NUM_BYTE_TOKENS = 256;
export const NUM_SPECIAL_TOKENS = 16;
export const FIRST_WORD_TOKEN_ID = NUM_BYTE_TOKENS + NUM_SPECIAL_TOKENS;
/** Below this, too few ids are left for words to matter (the config enforces it for generated thinkers). */
export const MIN_BYTE_VOCAB_SIZE = 512;

const NAMED_SPECIALS = [
  '<|endoftext|>', // 256: end of text (eos)
  '<|bos|>',
  '<|pad|>',
  '<|im_start|>',
  '<|im_end|>', // 260: end of a chat turn
  '<|audio|>', // placeholder rows for encoder output, spliced in by encoder2thinker
  '<|image|>',
  '<|audio_start|>',
  '<|audio_end|>',
  '<|image_start|>',
  '<|image_end|>',
  '<|video|>', // 267, once <|reserved_0|>: the video placeholder (ids unchanged, so generated models still load)
] as const;
export type ByteSpecialToken = (typeof NAMED_SPECIALS)[number];

export const SPECIAL_TOKENS: readonly string[] = Array.from({ length: NUM_SPECIAL_TOKENS }, (_, i) =>
  i < NAMED_SPECIALS.length ? NAMED_SPECIALS[i] : `<|reserved_${i - NAMED_SPECIALS.length}|>`,
);

const utf8 = new TextEncoder();
/** No word starts with this character (shared: allocating one per character was measurable). */
const NO_LENGTHS: readonly number[] = [];

export class ByteTokenizer implements ByteLevelTokenizer {
  readonly vocabSize: number;
  readonly eosTokenId = this.specialTokenId('<|endoftext|>');
  readonly bosTokenId = this.specialTokenId('<|bos|>');
  readonly padTokenId = this.specialTokenId('<|pad|>');
  readonly stopTokenIds: readonly number[] = [this.eosTokenId, this.specialTokenId('<|im_end|>')];
  /** Bytes of every id (specials: their marker text). */
  readonly #pieces: Uint8Array[];
  /** Word text -> its first id. */
  readonly #wordIds = new Map<string, number>();
  /**
   * First UTF-16 unit of a word -> the lengths of the words starting with it, longest first. Longest match tries only
   * those: trying every length up to the longest word at every position cost ~1.7 us a byte on text that is not
   * words (128 KiB stalled main's event loop for 200 ms).
   */
  readonly #lengthsByFirstUnit = new Map<number, number[]>();
  readonly #decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
  /** The chat template's turn texts, encoded once for the prompts that repeat them (TurnEncodings). */
  readonly #turns = new TurnEncodings((text) => this.encode(text));

  constructor(vocabSize: number) {
    if (!Number.isInteger(vocabSize) || vocabSize < MIN_BYTE_VOCAB_SIZE) {
      throw new ChorusError(
        ErrorCodes.TOKENIZER,
        `the byte tokenizer needs vocabSize >= ${MIN_BYTE_VOCAB_SIZE}, got ${vocabSize}; raise the thinker's ` +
          `vocab_size`,
      );
    }
    this.vocabSize = vocabSize;
    this.#pieces = [];
    for (let b = 0; b < NUM_BYTE_TOKENS; b++) this.#pieces.push(Uint8Array.of(b));
    for (const special of SPECIAL_TOKENS) this.#pieces.push(utf8.encode(special));
    const words = wordPieces(vocabSize - FIRST_WORD_TOKEN_ID);
    words.forEach((word, i) => {
      this.#pieces.push(utf8.encode(word));
      if (this.#wordIds.has(word)) return;
      this.#wordIds.set(word, FIRST_WORD_TOKEN_ID + i);
      const lengths = this.#lengthsByFirstUnit.get(word.charCodeAt(0)) ?? [];
      if (!lengths.includes(word.length)) lengths.push(word.length);
      this.#lengthsByFirstUnit.set(word.charCodeAt(0), lengths);
    });
    for (const lengths of this.#lengthsByFirstUnit.values()) lengths.sort((a, b) => b - a);
  }

  specialTokenId(name: ByteSpecialToken): number {
    return NUM_BYTE_TOKENS + NAMED_SPECIALS.indexOf(name);
  }

  isSpecialToken(id: number): boolean {
    return id >= NUM_BYTE_TOKENS && id < FIRST_WORD_TOKEN_ID;
  }

  /** Greedy longest match over the words; anything else (punctuation, non-ASCII) as UTF-8 bytes. */
  encode(text: string): number[] {
    const ids: number[] = [];
    let i = 0;
    while (i < text.length) {
      let matched = 0;
      const lengths = this.#lengthsByFirstUnit.get(text.charCodeAt(i)) ?? NO_LENGTHS;
      for (let k = 0; k < lengths.length; k++) {
        const len = lengths[k];
        if (len > text.length - i) continue;
        const id = this.#wordIds.get(text.slice(i, i + len));
        if (id !== undefined) {
          ids.push(id);
          matched = len;
          break;
        }
      }
      if (matched > 0) {
        i += matched;
        continue;
      }
      const codePoint = text.codePointAt(i)!;
      pushUtf8(ids, codePoint);
      i += codePoint > 0xffff ? 2 : 1;
    }
    return ids;
  }

  decode(ids: readonly number[], options: DecodeOptions = {}): string {
    const parts: Uint8Array[] = [];
    let length = 0;
    for (const id of ids) {
      if (options.skipSpecialTokens && this.isSpecialToken(id)) continue;
      const piece = this.tokenBytes(id);
      parts.push(piece);
      length += piece.length;
    }
    const bytes = new Uint8Array(length);
    let offset = 0;
    for (const part of parts) {
      bytes.set(part, offset);
      offset += part.length;
    }
    return this.#decoder.decode(bytes);
  }

  tokenBytes(id: number): Uint8Array {
    const piece = Number.isInteger(id) ? this.#pieces[id] : undefined;
    if (!piece)
      throw new ChorusError(
        ErrorCodes.TOKENIZER,
        `token id ${id} is outside the vocabulary (0..${this.vocabSize - 1})`,
      );
    return piece;
  }

  /** ChatML: <|im_start|>role\ncontent<|im_end|>\n per turn, then <|im_start|>assistant\n. */
  applyChatTemplate(messages: readonly ChatTurn[], tools?: readonly ToolDefinition[]): number[] {
    const markers = { start: this.specialTokenId('<|im_start|>'), end: this.specialTokenId('<|im_end|>') };
    return chatMlIds((t) => this.#turns.of(t), markers, toolTurns(messages, tools));
  }
}

/**
 * The UTF-8 bytes of one code point (a lone surrogate as TextEncoder writes it: U+FFFD). Inline, because a
 * TextEncoder call per character was most of the cost of encoding text that is not words.
 */
function pushUtf8(ids: number[], codePoint: number): void {
  const cp = codePoint >= 0xd800 && codePoint <= 0xdfff ? 0xfffd : codePoint;
  if (cp < 0x80) ids.push(cp);
  else if (cp < 0x800) ids.push(0xc0 | (cp >> 6), 0x80 | (cp & 0x3f));
  else if (cp < 0x10000) ids.push(0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
  else ids.push(0xf0 | (cp >> 18), 0x80 | ((cp >> 12) & 0x3f), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f));
}

/**
 * `count` word strings: " word" for every list word, then " Word", then the bare forms, then two-word
 * compounds, so any vocabulary size gets readable pieces. Deterministic: the ids are part of the model.
 */
function wordPieces(count: number): string[] {
  const capital = (w: string) => w[0].toUpperCase() + w.slice(1);
  const n = COMMON_WORDS.length;
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) {
    const round = Math.floor(i / n);
    const w = COMMON_WORDS[i % n];
    if (round === 0) out.push(` ${w}`);
    else if (round === 1) out.push(` ${capital(w)}`);
    else if (round === 2) out.push(w);
    else if (round === 3) out.push(capital(w));
    else {
      const k = i - 4 * n;
      out.push(` ${COMMON_WORDS[Math.floor(k / n) % n]}${COMMON_WORDS[k % n]}`);
    }
  }
  return out;
}
