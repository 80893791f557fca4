import { describe, expect, it } from 'vitest';
import { ByteTokenizer } from '../../src/tokenizer/ByteTokenizer.ts';
import { StreamingDetokenizer } from '../../src/tokenizer/StreamingDetokenizer.ts';
import type { Tokenizer } from '../../src/tokenizer/Tokenizer.ts';
import { Prng } from '../../stages/sampling/Prng.ts';

const bytes = new ByteTokenizer(512);

/** The same tokenizer without tokenBytes, so the detokenizer must use its decode-based strategy. */
function decodeOnly(t: ByteTokenizer): Tokenizer {
  return {
    vocabSize: t.vocabSize,
    bosTokenId: t.bosTokenId,
    eosTokenId: t.eosTokenId,
    padTokenId: t.padTokenId,
    stopTokenIds: t.stopTokenIds,
    encode: (text) => t.encode(text),
    decode: (ids, options) => t.decode(ids, options),
    isSpecialToken: (id) => t.isSpecialToken(id),
    applyChatTemplate: (messages) => t.applyChatTemplate(messages),
  };
}

function stream(tokenizer: Tokenizer, ids: readonly number[]): { deltas: string[]; text: string } {
  const detok = new StreamingDetokenizer(tokenizer);
  const deltas = ids.map((id) => detok.push(id));
  deltas.push(detok.flush());
  return { deltas, text: deltas.join('') };
}

/** Deterministic randomness (the project's seeded PRNG) so a failure replays exactly. */
function rng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.nextFloat();
}

const texts = [
  'plain ascii with the words of the list',
  '😀 grinning, 👨‍👩‍👧‍👦 family (ZWJ), 🏳️‍🌈 flag (ZWJ + VS16), 👍🏽 skin tone, 🇯🇵 regional pair',
  '漢字とかなの混じった文、中文字符、한국어 문장',
  'mixed: naïve café — “quotes” … €100, 𝄞 (4-byte), e\u0301',
];

describe.each([
  ['byte mode', bytes as Tokenizer],
  ['decode mode', decodeOnly(bytes)],
])('StreamingDetokenizer, %s', (_name, tokenizer) => {
  it.each(texts)('reproduces %j exactly when every multi-byte character is split byte by byte', (text) => {
    const ids = tokenizer.encode(text);
    // Every non-ASCII character really is spread over several tokens (one per byte).
    expect(ids.length).toBeGreaterThan([...text].length / 2);
    const { deltas, text: out } = stream(tokenizer, ids);
    expect(out).toBe(text);
    for (const d of deltas) expect(d).not.toContain('\uFFFD');
  });

  it('emits a character on the token that completes it, not later', () => {
    const detok = new StreamingDetokenizer(tokenizer);
    const emoji = [...new TextEncoder().encode('😀')];
    expect(emoji.slice(0, 3).map((b) => detok.push(b))).toEqual(['', '', '']);
    expect(detok.push(emoji[3])).toBe('😀');
    expect(detok.push(0x21)).toBe('!');
  });

  it('emits U+FFFD for an invalid byte only once nothing can repair it, and flushes a dangling tail', () => {
    const detok = new StreamingDetokenizer(tokenizer);
    expect(detok.push(0xe2)).toBe(''); // could still become "€" (e2 82 ac)
    expect(detok.push(0x82)).toBe('');
    expect(detok.push(0x41)).toBe('\uFFFDA'); // "A" proves e2 82 was truncated
    expect(detok.push(0xf0)).toBe('');
    expect(detok.flush()).toBe('\uFFFD');
  });

  it('skips special tokens by default', () => {
    const ids = [...tokenizer.encode('Hi'), tokenizer.eosTokenId];
    expect(stream(tokenizer, ids).text).toBe('Hi');
  });

  it('matches an offline decode on long random token streams (bytes, specials and words mixed)', () => {
    const next = rng(42);
    const ids = Array.from({ length: 3000 }, () => Math.floor(next() * tokenizer.vocabSize));
    expect(stream(tokenizer, ids).text).toBe(tokenizer.decode(ids, { skipSpecialTokens: true }));
  });
});

describe('StreamingDetokenizer, byte mode with specials shown', () => {
  it('prints markers when asked, ending any partial character first', () => {
    const detok = new StreamingDetokenizer(bytes, { skipSpecialTokens: false });
    expect(detok.push(0x48)).toBe('H');
    expect(detok.push(0xe2)).toBe('');
    expect(detok.push(bytes.eosTokenId)).toBe('\uFFFD<|endoftext|>');
  });
});
