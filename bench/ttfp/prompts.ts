/**
 * Seeded random prompts of an exact token count (vLLM's "random" dataset, made of words instead of random ids
 * so that the text survives the chat template and the HTTP/JSON path unchanged).
 *
 * The count is checked with the server's own tokenizer, inside the chat template: a prompt of inputLen tokens
 * adds exactly inputLen tokens to the templated conversation, whatever the template adds around it.
 */
import type { Tokenizer } from '../../src/index.ts';
import { ChorusError, COMMON_WORDS, ErrorCodes } from '../../src/basics.ts';

/** mulberry32: a small, fast, well-mixed 32-bit PRNG; the same seed gives the same prompts everywhere. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Tokens `content` adds to a one-message conversation (the template's own tokens cancel out). */
export function promptTokenCount(tokenizer: Tokenizer, content: string): number {
  const withContent = tokenizer.applyChatTemplate([{ role: 'user', content }]).length;
  const empty = tokenizer.applyChatTemplate([{ role: 'user', content: '' }]).length;
  return withContent - empty;
}

/** " word" pieces that are one token each for this tokenizer (word-level vocabularies, BPE merges alike). */
export function singleTokenWords(tokenizer: Tokenizer): string[] {
  return COMMON_WORDS.map((w) => ` ${w}`).filter((piece) => tokenizer.encode(piece).length === 1);
}

const MIN_WORDS = 8;

export interface PromptOptions {
  readonly tokenizer: Tokenizer;
  readonly count: number;
  readonly inputLen: number;
  readonly seed: number;
}

/**
 * `count` prompts of exactly `inputLen` tokens each. Words are drawn uniformly; a tokenizer that merges two
 * words into one token (or splits one) is corrected by adding or dropping words until the count is exact.
 */
export function makePrompts(o: PromptOptions): string[] {
  if (!Number.isInteger(o.inputLen) || o.inputLen < 1) {
    throw new ChorusError(ErrorCodes.REQUEST_INVALID, `--input-len must be a positive integer, got ${o.inputLen}`);
  }
  const words = singleTokenWords(o.tokenizer);
  if (words.length < MIN_WORDS) {
    throw new ChorusError(
      ErrorCodes.TOKENIZER,
      `the server's tokenizer has only ${words.length} single-token English words; the bench needs ${MIN_WORDS} to ` +
        `build prompts`,
    );
  }
  const random = seededRandom(o.seed);
  const pick = () => words[Math.floor(random() * words.length)];
  const prompts: string[] = [];
  for (let i = 0; i < o.count; i++) {
    const parts = Array.from({ length: o.inputLen }, pick);
    prompts.push(fitToLength(o.tokenizer, parts, o.inputLen, pick));
  }
  return prompts;
}

function fitToLength(tokenizer: Tokenizer, parts: string[], inputLen: number, pick: () => string): string {
  // Each pass moves the count by about one token, so a few times the length bounds any honest tokenizer.
  for (let attempt = 0; attempt < 4 * inputLen + 16; attempt++) {
    const text = parts.join('');
    const n = promptTokenCount(tokenizer, text);
    if (n === inputLen) return text;
    if (n < inputLen) parts.push(pick());
    else if (parts.length > 1) parts.pop();
    else parts[0] = pick();
  }
  throw new ChorusError(
    ErrorCodes.TOKENIZER,
    `could not build a prompt of exactly ${inputLen} tokens with this tokenizer; try another --seed or --input-len`,
  );
}
