export type { ByteLevelTokenizer, ChatTurn, DecodeOptions, Tokenizer } from './Tokenizer.ts';
export { isByteLevel } from './Tokenizer.ts';
export {
  ByteTokenizer,
  FIRST_WORD_TOKEN_ID,
  NUM_BYTE_TOKENS,
  NUM_SPECIAL_TOKENS,
  SPECIAL_TOKENS,
} from './ByteTokenizer.ts';
export { HfTokenizer } from './HfTokenizer.ts';
export { StreamingDetokenizer, type StreamingDetokenizerOptions } from './StreamingDetokenizer.ts';
export { createTokenizer } from './createTokenizer.ts';
