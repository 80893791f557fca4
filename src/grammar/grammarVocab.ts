/**
 * A tokenizer's vocabulary as xgrammar's TokenizerInfo takes it: every token's string by id, and how to read those
 * strings back into bytes (xgrammar's vocab types, as its Hugging Face loader detects them):
 * - byte_level: GPT-2's byte-to-unicode alphabet (tokenizer.json with a ByteLevel decoder: GPT-2, Qwen, SmolLM...);
 * - byte_fallback: SentencePiece pieces with "▁" for a space and <0xNN> byte tokens (Llama 2, Mistral);
 * - raw: the strings are the text.
 * The generated models' ByteTokenizer has raw bytes per id (single bytes 0x80..0xff included, which no JS string can
 * hold as text), so its tokens are written in the byte-level alphabet too.
 *
 * Special tokens (chat markers, media placeholders, end of text) become "", which xgrammar treats as special: a
 * grammar never lets the model write one; the stop tokens are allowed where the grammar may end.
 *
 * So do tokens holding a control character other than \n and \r (\0, \t, ...): xgrammar 0.1.27's rule for a string
 * with minLength/maxLength allows them raw, which JSON forbids (JSON.parse failed on a random answer with a \0 in a
 * name). No JSON layout here needs one, and free text under a tool grammar loses only the tab.
 *
 * And so do tokens whose bytes cannot be valid UTF-8 whatever follows, or whose last byte is a lead (E0, ED, F0, F4)
 * that only the next byte makes valid: xgrammar accepts UTF-8 for surrogates and for code points past U+10FFFF
 * (random answers held ED B5 84 and F7 8A 85 AF), which decode to U+FFFD and break maxLength. A character starting
 * with such a lead then comes from a token holding both bytes (byte-level BPE vocabularies merge them).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { isByteLevel, type Tokenizer } from '../tokenizer/index.ts';
import {
  byteLevelAlphabet,
  jsonParts,
  toByteLevel,
  vocabTypeOf,
  type JsonComponent,
  type VocabType,
} from '../tokenizer/pieceBytes.ts';

export { toByteLevel, type VocabType };

export interface GrammarVocab {
  /** Token strings by id (length: the tokenizer's vocabulary; logits past it are never allowed). */
  readonly vocab: string[];
  readonly vocabType: VocabType;
  /** The tokenizer puts a space before the text (SentencePiece's add_dummy_prefix / Metaspace prepend). */
  readonly prependSpace: boolean;
  /** Tokens that end an answer: where a grammar may end, these are the ones it allows. */
  readonly stopTokenIds: readonly number[];
}

/** A control byte JSON cannot hold raw (\n and \r are kept: string rules exclude them, free text needs them). */
const isBadControl = (b: number) => b < 0x20 && b !== 0x0a && b !== 0x0d;

/** Whether a token's bytes are left out (see above): a bad control byte, or UTF-8 that is or may become invalid. */
export function isUnsafeBytes(bytes: Uint8Array): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (isBadControl(b) || b === 0xc0 || b === 0xc1 || b >= 0xf5) return true;
    if (i + 1 === bytes.length) return b === 0xe0 || b === 0xed || b === 0xf0 || b === 0xf4;
    const next = bytes[i + 1];
    if (b === 0xe0 && next < 0xa0) return true; // overlong
    if (b === 0xed && next >= 0xa0) return true; // a surrogate
    if (b === 0xf0 && next < 0x90) return true; // overlong
    if (b === 0xf4 && next >= 0x90) return true; // past U+10FFFF
  }
  return false;
}

/** The vocabulary of a tokenizer whose tokens are byte strings (the generated models'). */
export function byteTokenizerVocab(tokenizer: Tokenizer): GrammarVocab {
  if (!isByteLevel(tokenizer)) throw new Error('byteTokenizerVocab needs a tokenizer with tokenBytes()');
  const vocab: string[] = [];
  for (let id = 0; id < tokenizer.vocabSize; id++)
    vocab.push(
      tokenizer.isSpecialToken(id) || isUnsafeBytes(tokenizer.tokenBytes(id))
        ? ''
        : toByteLevel(tokenizer.tokenBytes(id)),
    );
  return { vocab, vocabType: 'byte_level', prependSpace: false, stopTokenIds: stopIdsOf(tokenizer) };
}

/** The parts of tokenizer.json read here. */
interface TokenizerJson {
  model?: { vocab?: Record<string, number> | [string, number][]; byte_fallback?: boolean };
  added_tokens?: { id: number; content: string; special?: boolean }[];
  decoder?: JsonComponent | null;
  normalizer?: JsonComponent | null;
  pre_tokenizer?: JsonComponent | null;
}
/** The vocabulary of a Hugging Face tokenizer.json (its model's tokens and its added tokens). */
export function hfTokenizerVocab(json: TokenizerJson, tokenizer: Tokenizer, source: string): GrammarVocab {
  const vocab: string[] = new Array<string>(tokenizer.vocabSize).fill('');
  const modelVocab = json.model?.vocab;
  if (Array.isArray(modelVocab)) modelVocab.forEach(([token], id) => (vocab[id] = token));
  else if (modelVocab) for (const [token, id] of Object.entries(modelVocab)) vocab[id] = token;
  else throw new ChorusError(ErrorCodes.TOKENIZER, `${source} has no model.vocab: xgrammar needs the token strings`);
  for (const t of json.added_tokens ?? []) vocab[t.id] = t.special ? '' : t.content;
  const vocabType = vocabTypeOf(json);
  const controlled = hasBadControl(vocabType);
  for (let id = 0; id < vocab.length; id++) if (tokenizer.isSpecialToken(id) || controlled(vocab[id])) vocab[id] = '';
  const prepends = [...jsonParts(json.normalizer), ...jsonParts(json.pre_tokenizer)].some(
    (c) =>
      (c.type === 'Metaspace' && (c.prepend_scheme === 'always' || c.prepend_scheme === 'first')) ||
      (c.type === 'Metaspace' && c.add_prefix_space === true) ||
      (c.type === 'Prepend' && c.prepend === '▁'),
  );
  return { vocab, vocabType, prependSpace: prepends, stopTokenIds: stopIdsOf(tokenizer) };
}

/** The vocabulary of the tokenizer a Thinker loads: tokenizer.json from its folder, or the byte tokenizer's. */
export function grammarVocabOf(tokenizer: Tokenizer, tokenizerDir: string | undefined): GrammarVocab {
  if (tokenizerDir === undefined) return byteTokenizerVocab(tokenizer);
  const file = join(tokenizerDir, 'tokenizer.json');
  return hfTokenizerVocab(JSON.parse(readFileSync(file, 'utf8')) as TokenizerJson, tokenizer, file);
}

/** Whether a token string (in the vocabulary's own writing) stands for a control byte JSON cannot hold. */
function hasBadControl(vocabType: VocabType): (token: string) => boolean {
  if (vocabType === 'byte_level') {
    const byteOf = new Map(byteLevelAlphabet().map((ch, b) => [ch, b]));
    return (token) => {
      const bytes = Uint8Array.from([...token], (ch) => byteOf.get(ch) ?? 0x20);
      return isUnsafeBytes(bytes);
    };
  }
  // Raw text, or SentencePiece pieces with <0xNN> byte tokens.
  return (token) => {
    const byte = /^<0x([0-9A-Fa-f]{2})>$/.exec(token);
    if (byte) return isUnsafeBytes(Uint8Array.of(parseInt(byte[1], 16)));
    for (let i = 0; i < token.length; i++) if (isBadControl(token.charCodeAt(i))) return true;
    return false;
  };
}

function stopIdsOf(tokenizer: Tokenizer): number[] {
  return [...new Set([tokenizer.eosTokenId, ...tokenizer.stopTokenIds])];
}
