import type { TokenizerConfig } from '../../src/tokenizer/HfTokenizer.ts';

/**
 * A small byte-level BPE tokenizer.json, built here (nothing can be downloaded): the 256 byte symbols of
 * the GPT-2 byte-to-unicode alphabet, a few English merges, and merges that glue the first bytes of
 * emoji and CJK characters, so one character's bytes end up split across tokens.
 */
export function byteLevelAlphabet(): string[] {
  const printable = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const symbols: string[] = [];
  let next = 256;
  for (let b = 0; b < 256; b++) symbols.push(String.fromCodePoint(printable(b) ? b : next++));
  return symbols;
}

export function byteLevelTokenizerJson(): { json: object; config: TokenizerConfig } {
  const alphabet = byteLevelAlphabet();
  const sym = (text: string) => [...new TextEncoder().encode(text)].map((b) => alphabet[b]).join('');
  const vocab: Record<string, number> = {};
  alphabet.forEach((s, i) => (vocab[s] = i));
  const merges: [string, string][] = [];
  const merge = (a: string, b: string) => {
    merges.push([a, b]);
    vocab[a + b] ??= Object.keys(vocab).length;
  };
  merge(sym('h'), sym('e'));
  merge(sym(' '), sym('t'));
  merge(sym(' t'), sym('he'));
  merge(sym('l'), sym('l'));
  merge(sym('e'), sym('ll'));
  merge(sym('o'), sym('r'));
  // First two bytes of most emoji (f0 9f) and of many CJK characters (e4 b8 / e6 96), as single tokens.
  merge(alphabet[0xf0], alphabet[0x9f]);
  merge(alphabet[0xe4], alphabet[0xb8]);
  merge(alphabet[0xe6], alphabet[0x96]);
  const firstAdded = Object.keys(vocab).length;
  const added = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'].map((content, i) => ({
    id: firstAdded + i,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const json = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const config: TokenizerConfig = {
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    bos_token: null,
    clean_up_tokenization_spaces: false,
  };
  return { json, config };
}
