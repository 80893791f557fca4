import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { createTokenizer } from '../../src/tokenizer/createTokenizer.ts';
import { HfTokenizer } from '../../src/tokenizer/HfTokenizer.ts';
import { tempDir } from '../helpers/tempDir.ts';
import { StreamingDetokenizer } from '../../src/tokenizer/StreamingDetokenizer.ts';
import { tokenText } from '../../src/tokenizer/tokenText.ts';
import { byteLevelTokenizerJson as buildTokenizerJson } from '../helpers/byteLevelTokenizer.ts';

const { json, config } = buildTokenizerJson();
const tok = new HfTokenizer(json, config);
const idOf = (content: string) => tok.encode(content)[0];

describe('HfTokenizer', () => {
  it('applies the BPE merges and round-trips text of every script', () => {
    expect(tok.encode(' the')).toHaveLength(1);
    expect(tok.encode(' the')).toEqual([idOf(' the')]);
    for (const text of [
      'Hello there, the world!',
      '你好，中文字符 and 日本語',
      '😀 👨‍👩‍👧‍👦 🇯🇵 👍🏽',
      'naïve café €100 𝄞',
      '',
    ]) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
  });

  it("gives logprobs a token's own bytes, a token inside a character too (tokenText)", () => {
    const ids = tok.encode('😀');
    expect(ids).toHaveLength(3); // f0 9f merged, then the two other bytes alone
    const texts = ids.map((id) => tokenText(tok, id, -1));
    expect(texts.map((t) => t.bytes)).toEqual([[0xf0, 0x9f], [0x98], [0x80]]);
    expect(texts[0].token).toBe('\ufffd');
    expect(Buffer.from(texts.flatMap((t) => t.bytes)).toString('utf8')).toBe('😀');
    expect(tokenText(tok, idOf(' the'), -0.5)).toEqual({
      token: ' the',
      bytes: [...Buffer.from(' the')],
      logprob: -0.5,
    });
  });

  it('reads the specials from tokenizer_config.json', () => {
    const imEnd = tok.encode('<|im_end|>');
    expect(imEnd).toHaveLength(1);
    expect(tok.eosTokenId).toBe(imEnd[0]);
    expect(tok.padTokenId).toBe(tok.encode('<|endoftext|>')[0]);
    expect(tok.bosTokenId).toBeNull();
    expect(tok.stopTokenIds).toEqual([tok.eosTokenId]);
    expect(tok.isSpecialToken(tok.eosTokenId)).toBe(true);
    expect(tok.isSpecialToken(idOf(' the'))).toBe(false);
    expect(tok.vocabSize).toBe(256 + 9 + 3);
  });

  it('renders a ChatML prompt with the generation prompt', () => {
    const ids = tok.applyChatTemplate([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
    ]);
    expect(tok.decode(ids)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello there<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('system\nBe brief.\nuser\nHello there\nassistant\n');
  });

  it('falls back to the common end-of-text names when the config names none', () => {
    const bare = new HfTokenizer(json, {});
    expect(bare.eosTokenId).toBe(tok.padTokenId); // <|endoftext|>
    expect(bare.stopTokenIds).toEqual([bare.eosTokenId, tok.eosTokenId]); // plus <|im_end|>
  });

  it('loads from a folder through createTokenizer, and explains a broken folder', () => {
    const dir = tempDir('tok');
    writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
    writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
    const loaded = createTokenizer({ source: 'file', path: path.join(dir, 'm.onnx'), tokenizer: dir });
    expect(loaded).toBeInstanceOf(HfTokenizer);
    expect(loaded.encode('Hello there')).toEqual(tok.encode('Hello there'));

    const empty = tempDir('tok');
    expect(() => HfTokenizer.fromDir(empty)).toThrow(expect.objectContaining({ code: ErrorCodes.TOKENIZER }));
    writeFileSync(path.join(empty, 'tokenizer.json'), '{"model": ');
    expect(() => HfTokenizer.fromDir(empty)).toThrow(/not valid JSON/);
  });
});

describe('StreamingDetokenizer over HfTokenizer (decode mode)', () => {
  it.each(['😀 grinning 👨‍👩‍👧‍👦 family 🇯🇵', '中文字符，新文字', 'Hello there, the world! naïve €'])(
    '%j streams exactly, never emitting U+FFFD, though its characters are split across tokens',
    (text) => {
      const ids = tok.encode(text);
      const pieces = ids.map((id) => tok.decode([id]));
      // The fixture really does split characters: some single tokens are not valid UTF-8 on their own.
      if (/[^\p{ASCII}]/u.test(text)) expect(pieces.some((p) => p.includes('\uFFFD'))).toBe(true);
      const detok = new StreamingDetokenizer(tok, {
        promptIds: tok.applyChatTemplate([{ role: 'user', content: 'hi' }]),
      });
      const deltas = ids.map((id) => detok.push(id));
      deltas.push(detok.flush());
      expect(deltas.join('')).toBe(text);
      for (const d of deltas) expect(d).not.toContain('\uFFFD');
    },
  );

  it('holds a split emoji until its last token, then stops at end-of-turn without text', () => {
    const detok = new StreamingDetokenizer(tok);
    const ids = tok.encode('😀');
    expect(ids.length).toBeGreaterThan(1);
    const deltas = ids.map((id) => detok.push(id));
    expect(deltas.slice(0, -1).every((d) => d === '')).toBe(true);
    expect(deltas.at(-1)).toBe('😀');
    expect(detok.push(tok.eosTokenId)).toBe('');
  });
});

describe('StreamingDetokenizer over a SentencePiece-style (Metaspace) tokenizer', () => {
  // Metaspace decoders drop the leading space of the first token decoded, so decoding token by token
  // loses every space; the detokenizer's context window keeps them.
  const chars = ['▁', 'H', 'e', 'l', 'o', 'w', 'r', 'd'];
  const merges = [
    ['▁', 'H'],
    ['▁H', 'e'],
    ['l', 'l'],
    ['▁He', 'll'],
    ['▁Hell', 'o'],
    ['▁', 'w'],
    ['o', 'r'],
    ['▁w', 'or'],
    ['l', 'd'],
    ['▁wor', 'ld'],
  ];
  const vocab: Record<string, number> = {};
  for (const s of [...chars, ...merges.map(([a, b]) => a + b), '</s>']) vocab[s] ??= Object.keys(vocab).length;
  const sp = new HfTokenizer(
    {
      added_tokens: [{ id: vocab['</s>'], content: '</s>', special: true, normalized: false }],
      normalizer: null,
      pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
      post_processor: null,
      decoder: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'always', split: true },
      model: { type: 'BPE', vocab, merges, unk_token: null },
    },
    { eos_token: '</s>' },
  );

  it('keeps the spaces that a per-token decode loses', () => {
    const ids = sp.encode('Hello world world');
    expect(ids).toHaveLength(3);
    expect(ids.map((id) => sp.decode([id])).join('')).toBe('Helloworldworld'); // the naive way
    const detok = new StreamingDetokenizer(sp);
    expect(ids.map((id) => detok.push(id))).toEqual(['Hello', ' world', ' world']);
    expect(detok.flush()).toBe('');
  });

  it('gives the first answer token its space when the prompt is passed as context', () => {
    const [hello, world] = sp.encode('Hello world');
    const detok = new StreamingDetokenizer(sp, { promptIds: [hello] });
    expect(detok.push(world)).toBe(' world');
    expect(new StreamingDetokenizer(sp).push(world)).toBe('world'); // no context: a start of text
  });
});
