/**
 * The vocabulary layout the generated Thinker assumes, shared with the byte-level tokenizer
 * (src/tokenizer): ids 0..255 are bytes, NUM_SPECIAL_TOKENS specials follow (end-of-text first),
 * then whole words up to vocabSize.
 */
export const NUM_BYTE_TOKENS = 256;
export const NUM_SPECIAL_TOKENS = 16;
export const THINKER_EOS_TOKEN_ID = NUM_BYTE_TOKENS; // <|endoftext|>
export const FIRST_WORD_TOKEN_ID = NUM_BYTE_TOKENS + NUM_SPECIAL_TOKENS;

/**
 * A fixed logit bias (in units of logitScale) so that a random model's greedy text reads as words:
 * whole words (which carry their leading space) favoured, stray letters and punctuation rarer, and
 * ids that would decode to invalid UTF-8 (bytes >= 0x80), control bytes and specials pushed far down. End-of-text is
 * pushed down too, so a
 * random model rarely stops early and answers run to max_tokens (what the benchmarks want).
 */
export function thinkerLogitBias(vocabSize: number, logitScale: number): Float32Array {
  const bias = new Float32Array(vocabSize);
  for (let id = 0; id < vocabSize; id++) bias[id] = biasInSigmas(id) * logitScale;
  return bias;
}

function biasInSigmas(id: number): number {
  if (id >= FIRST_WORD_TOKEN_ID) return 1; // whole words (with a leading space): the bulk of the output
  if (id >= NUM_BYTE_TOKENS) return -8;
  if (id === 0x2e || id === 0x2c) return 0.3; // . ,
  if (id >= 0x61 && id <= 0x7a) return -0.5; // a-z: a few stray letters
  if (id >= 0x20 && id <= 0x7e) return -2; // space, digits, capitals, other punctuation: rare
  return -8; // control bytes, DEL, and 0x80..0xff (lone UTF-8 continuation/lead bytes)
}
