/**
 * The tokenizer converted from SmolLM2's GGUF metadata, loaded by the project's HfTokenizer, against an independent
 * byte-level BPE over the same vocabulary and merges (bpe.py): the same ids for text with multi-byte characters,
 * digits, whitespace runs and special tokens; every text decodes back to itself; and the chat template from the
 * metadata renders SmolLM2's ChatML prompt.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../../src/tokenizer/HfTokenizer.ts';
import { importedSmolLm2, runPython, smolLm2Path } from './smollm2.ts';

const TEXTS = [
  'Hello world',
  'The year 2024 had 365 days, not 366.',
  'Grüße, 世界! 🎉 naïve café — ½ and ①',
  "don't, I'll, we've: fine",
  '  leading, trailing and   inner spaces  ',
  'tabs\tand\nnewlines\n\n\nend',
  '<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n',
  'x<|endoftext|>y<repo_name>z',
];

let tokenizer: HfTokenizer;
let expected: number[][];

beforeAll(async () => {
  const [model, reference] = await Promise.all([
    importedSmolLm2(),
    runPython<{ ids: number[][] }>('bpe.py', { gguf: smolLm2Path(), texts: TEXTS }),
  ]);
  tokenizer = HfTokenizer.fromDir(model.dir);
  expected = reference.ids;
});

describe('GGUF tokenizer conversion (SmolLM2, byte-level BPE, pre-tokenizer "smollm")', () => {
  it('encodes as an independent BPE over the same vocabulary and merges, and decodes back', () => {
    TEXTS.forEach((text, i) => {
      const ids = tokenizer.encode(text);
      expect(ids, JSON.stringify(text)).toEqual(expected[i]);
      expect(tokenizer.decode(ids)).toBe(text);
    });
  });

  it('keeps special tokens whole, with EOS and stop tokens from the metadata', () => {
    expect(tokenizer.encode('<|im_end|>')).toEqual([2]);
    expect(tokenizer.eosTokenId).toBe(2); // tokenizer.ggml.eos_token_id: <|im_end|>
    expect(tokenizer.stopTokenIds).toContain(2);
    expect(tokenizer.isSpecialToken(1)).toBe(true);
    expect(tokenizer.decode(tokenizer.encode('a<|im_start|>b'), { skipSpecialTokens: true })).toBe('ab');
  });

  it("renders the chat template from tokenizer.chat_template (SmolLM2's ChatML with its default system turn)", () => {
    const ids = tokenizer.applyChatTemplate([{ role: 'user', content: 'Hi' }]);
    expect(tokenizer.decode(ids)).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' +
        '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    const withSystem = tokenizer.applyChatTemplate([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
    ]);
    expect(tokenizer.decode(withSystem)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
  });
});
