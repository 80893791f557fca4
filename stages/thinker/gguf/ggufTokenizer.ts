/**
 * A GGUF's tokenizer.* metadata -> the tokenizer.json + tokenizer_config.json that transformers would save, which
 * the project's HfTokenizer loads: byte-level BPE (tokenizer.ggml.model "gpt2": vocabulary, merges, control tokens
 * as special added tokens, user-defined ones as plain added tokens), the pre-tokenizer llama.cpp uses for
 * tokenizer.ggml.pre, BOS/EOS/padding/unknown from their ids, and the Jinja chat template. SentencePiece vocabularies
 * ("llama") and pre-tokenizers not listed here are refused by name.
 */
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import type { GgufFile, GgufValue } from './GgufFile.ts';

/** llama.cpp's token types (llama_token_type): CONTROL tokens are special, USER_DEFINED are added text. */
const TOKEN_TYPE = { control: 3, userDefined: 4 } as const;

const BYTE_LEVEL = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
const BYTE_LEVEL_NO_REGEX = { ...BYTE_LEVEL, use_regex: false };
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" +
  '\\s+(?!\\S)|\\s+';
const LLAMA3_SPLIT = QWEN2_SPLIT.replace('\\p{N}|', '\\p{N}{1,3}|');

function splitThen(pattern: string): object {
  return {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
      BYTE_LEVEL_NO_REGEX,
    ],
  };
}

/** tokenizer.ggml.pre -> the Hugging Face pre-tokenizer with the same splits (llama.cpp's llama-vocab.cpp). */
const PRE_TOKENIZERS: Record<string, object> = {
  default: BYTE_LEVEL,
  gpt2: BYTE_LEVEL,
  // GPT-2's regex after splitting every number character apart. A Split on \p{N} rather than the Digits
  // pre-tokenizer: @huggingface/tokenizers' Digits leaves "½" and "①" (category No) joined, llama.cpp splits them.
  ...Object.fromEntries(
    ['smollm', 'starcoder', 'refact', 'codeshell'].map((name) => [
      name,
      {
        type: 'Sequence',
        pretokenizers: [
          { type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'Isolated', invert: false },
          BYTE_LEVEL,
        ],
      },
    ]),
  ),
  qwen2: splitThen(QWEN2_SPLIT),
  llama3: splitThen(LLAMA3_SPLIT),
  'llama-bpe': splitThen(LLAMA3_SPLIT),
};

export interface ConvertedTokenizer {
  readonly tokenizerJson: object;
  readonly tokenizerConfig: Record<string, unknown>;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number;
}

function unsupported(path: string, what: string): ChorusError {
  return new ChorusError(ErrorCodes.GGUF_UNSUPPORTED, `${path}: ${what}`);
}

function stringArray(file: GgufFile, key: string): string[] {
  const value = file.metadata.get(key);
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    throw new ChorusError(ErrorCodes.GGUF_INVALID, `${file.path}: metadata ${key} is missing or not a string array`);
  return value as string[];
}

function idAt(file: GgufFile, key: string, vocabSize: number): number | null {
  const value: GgufValue | undefined = file.metadata.get(key);
  if (value === undefined) return null;
  if (typeof value !== 'number' || value < 0 || value >= vocabSize)
    throw new ChorusError(ErrorCodes.GGUF_INVALID, `${file.path}: ${key} ${String(value)} is not a token id`);
  return value;
}

export function convertTokenizer(file: GgufFile): ConvertedTokenizer {
  const model = file.metadata.get('tokenizer.ggml.model');
  if (model !== 'gpt2') {
    throw unsupported(
      file.path,
      `tokenizer.ggml.model ${JSON.stringify(model)} is not supported: Chorus converts byte-level BPE ("gpt2") ` +
        'vocabularies (SentencePiece "llama" vocabularies are not converted yet)',
    );
  }
  const pre = file.metadata.get('tokenizer.ggml.pre') ?? 'default';
  const preTokenizer = typeof pre === 'string' ? PRE_TOKENIZERS[pre] : undefined;
  if (!preTokenizer) {
    throw unsupported(
      file.path,
      `tokenizer.ggml.pre ${JSON.stringify(pre)} is not supported; known: ${Object.keys(PRE_TOKENIZERS).join(', ')}`,
    );
  }
  const tokens = stringArray(file, 'tokenizer.ggml.tokens');
  const merges = stringArray(file, 'tokenizer.ggml.merges');
  const types = file.metadata.get('tokenizer.ggml.token_type');
  const typeOf = (id: number) => (Array.isArray(types) ? (types[id] as number) : 1);
  const vocab: Record<string, number> = {};
  const added: object[] = [];
  tokens.forEach((token, id) => {
    vocab[token] = id;
    const type = typeOf(id);
    if (type === TOKEN_TYPE.control || type === TOKEN_TYPE.userDefined) {
      const special = type === TOKEN_TYPE.control;
      added.push({
        id,
        content: token,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: !special,
        special,
      });
    }
  });
  const eosTokenId = idAt(file, 'tokenizer.ggml.eos_token_id', tokens.length);
  if (eosTokenId === null)
    throw new ChorusError(ErrorCodes.GGUF_INVALID, `${file.path} has no tokenizer.ggml.eos_token_id`);
  const bosTokenId = idAt(file, 'tokenizer.ggml.bos_token_id', tokens.length);
  const padTokenId = idAt(file, 'tokenizer.ggml.padding_token_id', tokens.length);
  const unkTokenId = idAt(file, 'tokenizer.ggml.unknown_token_id', tokens.length);
  const text = (id: number | null) => (id === null ? null : tokens[id]);
  const template = file.metadata.get('tokenizer.chat_template');
  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: preTokenizer,
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: text(unkTokenId),
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const tokenizerConfig: Record<string, unknown> = {
    bos_token: text(bosTokenId),
    eos_token: text(eosTokenId),
    pad_token: text(padTokenId),
    unk_token: text(unkTokenId),
    add_bos_token: file.metadata.get('tokenizer.ggml.add_bos_token') === true,
    clean_up_tokenization_spaces: false,
    ...(typeof template === 'string' ? { chat_template: template } : {}),
  };
  return { tokenizerJson, tokenizerConfig, bosTokenId, eosTokenId };
}
