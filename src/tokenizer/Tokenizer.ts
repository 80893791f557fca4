/**
 * What the engine needs from a tokenizer, whichever kind backs it: the built-in ByteTokenizer of the
 * generated models, or a Hugging Face tokenizer.json (HfTokenizer) for real exports.
 */
import type { ToolCall, ToolDefinition } from '../common/engine.ts';

/** Part of a turn's content: text, or one token id inserted as is (a media placeholder such as <|audio|>). */
export type ChatPiece = string | { readonly tokenId: number };

export interface ChatTurn {
  readonly role: string; // 'system' | 'user' | 'assistant' | 'tool' in practice; the template does not care
  /** Text, or pieces: text runs are encoded as text; token pieces go in verbatim, so user text can never forge one. */
  readonly content: string | readonly ChatPiece[];
  /** An assistant turn's tool calls. */
  readonly toolCalls?: readonly ToolCall[];
  /** A tool turn: the call it answers. */
  readonly toolCallId?: string;
}

/** Characters of turn texts a TurnEncodings keeps (with their ids): a long conversation's history and more. */
export const TURN_ENCODINGS_CHARS = 1 << 20;

/**
 * encode() of the texts a chat template's turns are made of, kept for the next prompt that has them: a conversation
 * is templated whole at every turn, its history again each time, and a Realtime response's plan counts a new item's
 * positions from its turn's text just before the engine templates the prompt with it (on the first packet's path).
 * The least recently used go first beyond `maxChars`; a text longer than that alone is not kept. The ids are shared:
 * callers copy them (appendIds), never change them.
 */
export class TurnEncodings {
  readonly #ids = new Map<string, readonly number[]>();
  #chars = 0;

  constructor(
    private readonly encode: (text: string) => number[],
    private readonly maxChars = TURN_ENCODINGS_CHARS,
  ) {}

  of(text: string): readonly number[] {
    const known = this.#ids.get(text);
    if (known) {
      this.#ids.delete(text); // to the end: the most recently used
      this.#ids.set(text, known);
      return known;
    }
    const ids = this.encode(text);
    if (text.length > this.maxChars) return ids;
    this.#ids.set(text, ids);
    this.#chars += text.length;
    for (const old of this.#ids.keys()) {
      if (this.#chars <= this.maxChars) break;
      this.#ids.delete(old);
      this.#chars -= old.length;
    }
    return ids;
  }

  /** Texts kept now. */
  get size(): number {
    return this.#ids.size;
  }
}

/**
 * encode(prefix + content + suffix), where content may hold token pieces: each text run (with the prefix on the
 * first and the suffix on the last) is encoded on its own and the tokens go between, so a placeholder splits the
 * text exactly where it stands. Plain string content encodes exactly as before (one run).
 */
export function encodeTurn(
  encode: (text: string) => readonly number[],
  prefix: string,
  content: ChatTurn['content'],
  suffix = '',
): readonly number[] {
  if (typeof content === 'string') return encode(`${prefix}${content}${suffix}`);
  const ids: number[] = [];
  let text = prefix;
  for (const piece of content) {
    if (typeof piece === 'string') {
      text += piece;
      continue;
    }
    if (text.length > 0) appendIds(ids, encode(text));
    ids.push(piece.tokenId);
    text = '';
  }
  text += suffix;
  if (text.length > 0) appendIds(ids, encode(text));
  return ids;
}

/**
 * ChatML's prompt: <|im_start|>role\ncontent<|im_end|>\n per turn, then <|im_start|>assistant\n, with `start` and
 * `end` the marker tokens' ids (ByteTokenizer's own; an HF tokenizer's when its vocabulary has them).
 */
export function chatMlIds(
  encode: (text: string) => readonly number[],
  markers: { readonly start: number; readonly end: number },
  turns: readonly ChatTurn[],
): number[] {
  const ids: number[] = [];
  for (const m of turns) {
    ids.push(markers.start);
    appendIds(ids, encodeTurn(encode, `${m.role}\n`, m.content));
    ids.push(markers.end);
    appendIds(ids, encode('\n'));
  }
  ids.push(markers.start);
  return appendIds(ids, encode('assistant\n'));
}

/**
 * ids.push(...more) for arrays of any length. A spread passes every element as a call argument on the stack: a
 * prompt of ~0.3 MiB overflowed it (RangeError, a 500 for the client). Prompts are long; never spread them.
 */
export function appendIds(ids: number[], more: readonly number[]): number[] {
  for (let i = 0; i < more.length; i++) ids.push(more[i]);
  return ids;
}

export interface DecodeOptions {
  /** Leave special tokens (end-of-text, chat markers) out of the text. Default false, as in HF. */
  readonly skipSpecialTokens?: boolean;
}

export interface Tokenizer {
  readonly vocabSize: number;
  /** null when the tokenizer has no beginning-of-sequence token (ChatML models such as Qwen). */
  readonly bosTokenId: number | null;
  readonly eosTokenId: number;
  readonly padTokenId: number;
  /** Tokens that end an answer: end-of-text and the chat template's end-of-turn marker. */
  readonly stopTokenIds: readonly number[];
  /**
   * Plain text -> ids. No special tokens are added, and (for ByteTokenizer) marker strings such as
   * "<|im_end|>" in the text stay text, so user content cannot forge a turn boundary.
   */
  encode(text: string): number[];
  decode(ids: readonly number[], options?: DecodeOptions): string;
  isSpecialToken(id: number): boolean;
  /**
   * The conversation as prompt ids, ending with the assistant's generation prompt. `tools`: the functions the model
   * may call (a Jinja template receives them as Hugging Face passes them; ChatML gets toolTurns.ts's system block).
   */
  applyChatTemplate(messages: readonly ChatTurn[], tools?: readonly ToolDefinition[]): number[];
}

/** A tokenizer whose tokens are byte strings, so streaming can decode bytes instead of re-decoding text. */
export interface ByteLevelTokenizer extends Tokenizer {
  /** The UTF-8 bytes a (non-special) token stands for. */
  tokenBytes(id: number): Uint8Array;
}

export function isByteLevel(tokenizer: Tokenizer): tokenizer is ByteLevelTokenizer {
  return typeof (tokenizer as Partial<ByteLevelTokenizer>).tokenBytes === 'function';
}
