/**
 * How a tokenizer.json writes its tokens' bytes, and a token string read back into them: the token strings of a
 * Hugging Face vocabulary are the bytes in one of three writings (xgrammar's vocab types, as its loader detects them):
 * - byte_level: GPT-2's byte-to-unicode alphabet (a ByteLevel decoder: GPT-2, Qwen, SmolLM...);
 * - byte_fallback: SentencePiece pieces, "▁" for a space and <0xNN> for a byte (Llama 2, Mistral);
 * - raw: the strings are the text.
 * Logprobs (tokenText.ts) need a token's own bytes, which decoding it alone loses when it is part of a character.
 */
export type VocabType = 'byte_level' | 'byte_fallback' | 'raw';

/** The parts of tokenizer.json's components read here and by the grammar's vocabulary. */
export interface JsonComponent {
  type?: string;
  decoders?: JsonComponent[];
  normalizers?: JsonComponent[];
  pretokenizers?: JsonComponent[];
  prepend_scheme?: string;
  add_prefix_space?: boolean;
  prepend?: string;
}

/** A component and, for a Sequence, its parts, flattened. */
export function jsonParts(c: JsonComponent | null | undefined): JsonComponent[] {
  if (!c) return [];
  return [c, ...[...(c.decoders ?? []), ...(c.normalizers ?? []), ...(c.pretokenizers ?? [])].flatMap(jsonParts)];
}

/** The writing of a tokenizer.json's token strings, from its decoder (and BPE's byte_fallback flag). */
export function vocabTypeOf(json: { decoder?: JsonComponent | null; model?: { byte_fallback?: boolean } }): VocabType {
  const decoders = jsonParts(json.decoder).map((c) => c.type);
  if (decoders.includes('ByteLevel')) return 'byte_level';
  if (decoders.includes('ByteFallback') || json.model?.byte_fallback === true) return 'byte_fallback';
  return 'raw';
}

let byteToUnicode: string[] | null = null;
let unicodeToByte: Map<string, number> | null = null;

/** GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for code points from 256 up. */
export function byteLevelAlphabet(): string[] {
  if (byteToUnicode) return byteToUnicode;
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table: string[] = new Array<string>(256);
  let next = 256;
  for (let b = 0; b < 256; b++) table[b] = String.fromCodePoint(printable(b) ? b : next++);
  byteToUnicode = table;
  return table;
}

export function toByteLevel(bytes: Uint8Array): string {
  const table = byteLevelAlphabet();
  let s = '';
  for (const b of bytes) s += table[b];
  return s;
}

const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;
const utf8 = new TextEncoder();

/** A token string's bytes in its vocabulary's writing; null where the writing does not say (raw, or a stray char). */
export function pieceBytes(piece: string, vocabType: VocabType): Uint8Array | null {
  if (vocabType === 'byte_level') {
    unicodeToByte ??= new Map(byteLevelAlphabet().map((ch, b) => [ch, b]));
    const chars = [...piece];
    const bytes = new Uint8Array(chars.length);
    for (let i = 0; i < chars.length; i++) {
      const b = unicodeToByte.get(chars[i]);
      if (b === undefined) return null;
      bytes[i] = b;
    }
    return bytes;
  }
  if (vocabType === 'byte_fallback') {
    const byte = BYTE_PIECE.exec(piece);
    return byte ? Uint8Array.of(parseInt(byte[1], 16)) : utf8.encode(piece.replaceAll('▁', ' '));
  }
  return null;
}
