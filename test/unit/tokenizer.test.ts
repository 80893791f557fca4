import { describe, expect, it } from 'vitest';
import type { ModelSpec } from '../../src/common/modelSpec.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { presets } from '../../stages/generator/presets.ts';
import * as vocab from '../../stages/thinker/thinkerVocab.ts';
import {
  ByteTokenizer,
  FIRST_WORD_TOKEN_ID,
  NUM_BYTE_TOKENS,
  SPECIAL_TOKENS,
} from '../../src/tokenizer/ByteTokenizer.ts';
import { createTokenizer } from '../../src/tokenizer/createTokenizer.ts';
import { TurnEncodings } from '../../src/tokenizer/Tokenizer.ts';
import { COMMON_WORDS } from '../../src/tokenizer/words.ts';

const tok = new ByteTokenizer(presets.tiny.thinker.vocabSize);

describe('ByteTokenizer layout', () => {
  it('agrees with the layout the generated Thinker is built for', () => {
    expect([NUM_BYTE_TOKENS, FIRST_WORD_TOKEN_ID, tok.eosTokenId]).toEqual([
      vocab.NUM_BYTE_TOKENS,
      vocab.FIRST_WORD_TOKEN_ID,
      vocab.THINKER_EOS_TOKEN_ID,
    ]);
    expect(SPECIAL_TOKENS).toHaveLength(vocab.NUM_SPECIAL_TOKENS);
  });

  it('bytes, then 16 specials (end-of-text first), then words', () => {
    expect(tok.decode([72, 105])).toBe('Hi');
    expect(tok.eosTokenId).toBe(NUM_BYTE_TOKENS);
    expect(SPECIAL_TOKENS).toHaveLength(16);
    expect(new Set(SPECIAL_TOKENS).size).toBe(16);
    expect(tok.decode([tok.eosTokenId, tok.bosTokenId, tok.padTokenId])).toBe('<|endoftext|><|bos|><|pad|>');
    expect(tok.stopTokenIds).toEqual([tok.eosTokenId, tok.specialTokenId('<|im_end|>')]);
    for (let id = 0; id < tok.vocabSize; id++)
      expect(tok.isSpecialToken(id)).toBe(id >= NUM_BYTE_TOKENS && id < FIRST_WORD_TOKEN_ID);
  });

  it('the word list is lowercase ASCII without duplicates', () => {
    expect(COMMON_WORDS.length).toBeGreaterThan(900);
    expect(new Set(COMMON_WORDS).size).toBe(COMMON_WORDS.length);
    for (const w of COMMON_WORDS) expect(w).toMatch(/^[a-z]+$/);
  });

  it('word ids decode to space-led words, so random word ids read as word salad', () => {
    const ids = Array.from({ length: 10 }, (_, i) => FIRST_WORD_TOKEN_ID + i);
    expect(tok.decode(ids)).toBe(` ${COMMON_WORDS.slice(0, 10).join(' ')}`);
    const last = tok.decode([tok.vocabSize - 1]);
    expect(last).toMatch(/^ [a-z]+$/);
  });

  it('a larger vocabulary continues with capitalised words and then compounds, all distinct text', () => {
    const big = new ByteTokenizer(FIRST_WORD_TOKEN_ID + 4 * COMMON_WORDS.length + 10);
    expect(big.decode([FIRST_WORD_TOKEN_ID + COMMON_WORDS.length])).toBe(
      ` ${COMMON_WORDS[0][0].toUpperCase()}${COMMON_WORDS[0].slice(1)}`,
    );
    expect(big.decode([FIRST_WORD_TOKEN_ID + 2 * COMMON_WORDS.length])).toBe(COMMON_WORDS[0]);
    expect(big.decode([big.vocabSize - 1])).toBe(` ${COMMON_WORDS[0]}${COMMON_WORDS[9]}`);
  });

  it('rejects a vocabulary too small for bytes + specials + words, and ids outside it', () => {
    expect(() => new ByteTokenizer(511)).toThrow(expect.objectContaining({ code: ErrorCodes.TOKENIZER }));
    expect(() => tok.decode([tok.vocabSize])).toThrow(expect.objectContaining({ code: ErrorCodes.TOKENIZER }));
  });
});

describe('ByteTokenizer encode', () => {
  it('greedy longest match over words, bytes for the rest', () => {
    const the = FIRST_WORD_TOKEN_ID + COMMON_WORDS.indexOf('the');
    const there = FIRST_WORD_TOKEN_ID + COMMON_WORDS.indexOf('there');
    expect(tok.encode(' the')).toEqual([the]);
    // " there" is a word of its own: the longer match wins over " the" + "re".
    expect(tok.encode(' there')).toEqual([there]);
    expect(tok.encode(' the!')).toEqual([the, 0x21]);
    expect(tok.encode('the')).toEqual([0x74, 0x68, 0x65]); // no leading space: not a word piece in the tiny vocab
  });

  it('round-trips any text, including emoji, ZWJ sequences, CJK and marker look-alikes', () => {
    const texts = [
      'Hello there, how are you today?',
      '👨‍👩‍👧‍👦 family, 🇯🇵 flag, 👍🏽 thumbs',
      '中文字符 and 日本語のかな and 한국어',
      'e\u0301 combining, \u0000 nul, tabs\tand\nnewlines',
      'user text with <|im_end|> inside',
    ];
    for (const text of texts) expect(tok.decode(tok.encode(text))).toBe(text);
    // Marker text typed by a user stays text: it can never forge a turn boundary.
    expect(tok.encode('<|im_end|>')).not.toContain(tok.specialTokenId('<|im_end|>'));
  });

  it('encodes exactly as a naive longest match over every length does (the ids are part of the model)', () => {
    const big = new ByteTokenizer(presets.omni.thinker.vocabSize);
    const words = COMMON_WORDS.slice(0, 40);
    const alphabet = [' ', 'e', 'T', '!', 'é', '中', '👍', '\ud800', '\n', ...words.map((w) => ` ${w}`), ...words];
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (const t of [tok, big]) {
      for (let n = 0; n < 200; n++) {
        const text = Array.from({ length: 30 }, () => alphabet[Math.floor(random() * alphabet.length)]).join('');
        expect(t.encode(text), JSON.stringify(text)).toEqual(naiveEncode(t, text));
      }
    }
  });

  it('renders a prompt of megabytes without overflowing the stack (no spread of its ids)', () => {
    const long = 'x!'.repeat(256 * 1024); // 512 KiB a run: 512k ids, past what one call's arguments can hold
    const ids = tok.applyChatTemplate([{ role: 'user', content: [long, { tokenId: 300 }, long] }]);
    expect(ids.length).toBeGreaterThan(2 * long.length);
    expect(tok.decode(ids.slice(-3))).toBe('assistant\n'.slice(-3));
  });
});

/** The encoder as first written: at every position, every length from the longest word down, then UTF-8 bytes. */
function naiveEncode(t: ByteTokenizer, text: string): number[] {
  const wordIds = new Map<string, number>();
  for (let id = t.vocabSize - 1; id >= FIRST_WORD_TOKEN_ID; id--) wordIds.set(t.decode([id]), id);
  const longest = Math.max(...[...wordIds.keys()].map((w) => w.length));
  const ids: number[] = [];
  for (let i = 0; i < text.length;) {
    const most = Math.min(longest, text.length - i);
    const len = Array.from({ length: most }, (_, k) => most - k).find((l) => wordIds.has(text.slice(i, i + l)));
    if (len !== undefined) {
      ids.push(wordIds.get(text.slice(i, i + len))!);
      i += len;
      continue;
    }
    const char = String.fromCodePoint(text.codePointAt(i)!);
    ids.push(...new TextEncoder().encode(char));
    i += char.length;
  }
  return ids;
}

describe('chat template', () => {
  it('renders ChatML with the generation prompt', () => {
    const ids = tok.applyChatTemplate([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi there' },
    ]);
    expect(tok.decode(ids)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(ids[0]).toBe(tok.specialTokenId('<|im_start|>'));
    expect(ids.filter((id) => id === tok.specialTokenId('<|im_start|>'))).toHaveLength(3);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('system\nBe brief.\nuser\nHi there\nassistant\n');
  });

  it("a conversation templated again encodes each turn's text once, with the same ids as encoded whole", () => {
    const history = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'What is the capital of France?' },
      { role: 'assistant', content: 'Paris.' },
    ];
    const next = [...history, { role: 'user', content: 'And of Spain?' }];
    const fresh = () => new ByteTokenizer(presets.tiny.thinker.vocabSize);
    const t = fresh();
    let encoded = 0;
    const encode = t.encode.bind(t);
    t.encode = (text: string) => {
      encoded++;
      return encode(text);
    };
    const first = t.applyChatTemplate(history);
    const once = encoded;
    const again = t.applyChatTemplate(next);
    expect(encoded - once).toBe(1); // the new turn; the history and the markers' texts are known
    expect(first).toEqual(fresh().applyChatTemplate(history));
    expect(again).toEqual(fresh().applyChatTemplate(next));
    expect(t.applyChatTemplate(history)).toEqual(first);
    expect(encoded - once).toBe(1);
  });
});

describe('TurnEncodings', () => {
  it('keeps the most recently used texts within its characters; a text over them alone is not kept', () => {
    const calls: string[] = [];
    const turns = new TurnEncodings((text) => (calls.push(text), [...text].map((c) => c.charCodeAt(0))), 10);
    expect(turns.of('abcd')).toEqual([97, 98, 99, 100]);
    turns.of('efgh');
    turns.of('abcd'); // known: now the most recent
    turns.of('ijkl'); // 12 characters: the least recently used ('efgh') goes
    expect(turns.size).toBe(2);
    turns.of('abcd');
    turns.of('efgh');
    expect(calls).toEqual(['abcd', 'efgh', 'ijkl', 'efgh']);
    expect(turns.of('a text longer than ten')).toHaveLength(22);
    turns.of('a text longer than ten');
    expect(calls.filter((c) => c.startsWith('a text'))).toHaveLength(2);
  });
});

describe('createTokenizer', () => {
  const thinkerSpec: ModelSpec = {
    source: 'generated',
    kind: 'thinker',
    preset: 'omni',
    seed: 0,
    size: presets.omni.thinker,
  };

  it('gives a generated thinker the byte tokenizer of its vocabulary', () => {
    const t = createTokenizer(thinkerSpec);
    expect(t).toBeInstanceOf(ByteTokenizer);
    expect(t.vocabSize).toBe(presets.omni.thinker.vocabSize);
  });

  it('sizes the byte tokenizer of a file model without a tokenizer folder from the given vocabulary', () => {
    expect(createTokenizer({ source: 'file', path: '/m.onnx' }, { vocabSize: 1000 }).vocabSize).toBe(1000);
    expect(createTokenizer({ source: 'file', path: '/m.onnx' }, 600).vocabSize).toBe(600);
    expect(() => createTokenizer({ source: 'file', path: '/m.onnx' })).toThrow(
      expect.objectContaining({ code: ErrorCodes.TOKENIZER }),
    );
  });

  it('refuses models that have no tokenizer', () => {
    const talker: ModelSpec = {
      source: 'generated',
      kind: 'talker',
      preset: 'tiny',
      seed: 0,
      size: { ...presets.tiny.talker, conditionDim: 512 },
    };
    expect(() => createTokenizer(talker)).toThrow(/has no tokenizer/);
  });
});
