/**
 * Bench prompts: exactly input-len tokens inside the chat template, reproducible from the seed, and corrected
 * when a tokenizer merges words.
 */
import { describe, expect, it } from 'vitest';
import { pcm16SamplesInBase64 } from '../../bench/ttfp/clients/BenchClient.ts';
import { makePrompts, promptTokenCount, seededRandom, singleTokenWords } from '../../bench/ttfp/prompts.ts';
import { ByteTokenizer } from '../../src/tokenizer/index.ts';

describe('makePrompts', () => {
  for (const vocab of [512, 2048]) {
    it(`gives prompts of exactly input-len tokens for the byte tokenizer of vocab ${vocab}`, () => {
      const tokenizer = new ByteTokenizer(vocab);
      for (const inputLen of [1, 8, 100, 257]) {
        const prompts = makePrompts({ tokenizer, count: 5, inputLen, seed: 3 });
        expect(prompts).toHaveLength(5);
        for (const p of prompts) {
          expect(promptTokenCount(tokenizer, p)).toBe(inputLen);
          // The templated prompt grows by exactly inputLen over an empty message.
          const templated = tokenizer.applyChatTemplate([{ role: 'user', content: p }]);
          expect(templated.length - tokenizer.applyChatTemplate([{ role: 'user', content: '' }]).length).toBe(inputLen);
        }
      }
    });
  }

  it('is reproducible from the seed, and different seeds give different prompts', () => {
    const tokenizer = new ByteTokenizer(512);
    const a = makePrompts({ tokenizer, count: 4, inputLen: 20, seed: 11 });
    expect(makePrompts({ tokenizer, count: 4, inputLen: 20, seed: 11 })).toEqual(a);
    expect(makePrompts({ tokenizer, count: 4, inputLen: 20, seed: 12 })).not.toEqual(a);
    expect(new Set(a).size).toBe(4); // prompts within one run differ too
  });

  it('adds words when the tokenizer merges words into one token', () => {
    // A tokenizer that merges a word starting with "t" into the word before it, as BPE merges join frequent
    // pairs (the chat template encodes through it too).
    class MergingTokenizer extends ByteTokenizer {
      override encode(text: string): number[] {
        return super.encode(text.replace(/ ([a-z]+) t[a-z]*/g, ' $1'));
      }
    }
    const merging = new MergingTokenizer(512);
    expect(singleTokenWords(merging)).toContain(' the');
    const prompts = makePrompts({ tokenizer: merging, count: 10, inputLen: 60, seed: 5 });
    const merged = prompts.filter((p) => p.split(' ').length - 1 > 60);
    expect(merged.length).toBeGreaterThan(0); // the case under test happened
    for (const p of prompts) expect(promptTokenCount(merging, p)).toBe(60);
  });

  it('rejects a non-positive length with a message naming the flag', () => {
    expect(() => makePrompts({ tokenizer: new ByteTokenizer(512), count: 1, inputLen: 0, seed: 0 })).toThrow(
      /--input-len/,
    );
  });
});

describe('seededRandom', () => {
  it('draws in [0, 1) and repeats for the same seed', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const draws = Array.from({ length: 1000 }, () => a());
    expect(draws.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(Array.from({ length: 1000 }, () => b())).toEqual(draws);
    expect(new Set(draws).size).toBeGreaterThan(990);
  });
});

describe('pcm16SamplesInBase64', () => {
  it('counts samples from the base64 length, padding included', () => {
    for (const samples of [0, 1, 2, 3, 1920, 1921]) {
      const b64 = Buffer.alloc(samples * 2).toString('base64');
      expect(pcm16SamplesInBase64(b64)).toBe(samples);
    }
  });
});
