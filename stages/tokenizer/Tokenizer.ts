/**
 * What the engine needs from a tokenizer, whichever kind backs it: the built-in ByteTokenizer of the
 * generated models, or a Hugging Face tokenizer.json (HfTokenizer) for real exports.
 */
export interface ChatTurn {
  readonly role: string; // 'system' | 'user' | 'assistant' in practice; the template does not care
  readonly content: string;
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
  /** The conversation as prompt ids, ending with the assistant's generation prompt. */
  applyChatTemplate(messages: readonly ChatTurn[]): number[];
}

/** A tokenizer whose tokens are byte strings, so streaming can decode bytes instead of re-decoding text. */
export interface ByteLevelTokenizer extends Tokenizer {
  /** The UTF-8 bytes a (non-special) token stands for. */
  tokenBytes(id: number): Uint8Array;
}

export function isByteLevel(tokenizer: Tokenizer): tokenizer is ByteLevelTokenizer {
  return typeof (tokenizer as Partial<ByteLevelTokenizer>).tokenBytes === 'function';
}
