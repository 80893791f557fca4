/**
 * The decoder a GGUF describes, read from its `<arch>.*` metadata and checked before any weight is touched: the
 * llama and qwen2 families (RMSNorm, RoPE, grouped-query attention, SwiGLU; qwen2 adds q/k/v biases). Anything else
 * (another architecture, partial rotary, a RoPE scaling other than linear, per-layer head counts) is refused by name.
 */
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import type { GgufFile, GgufValue } from './GgufFile.ts';

export const SUPPORTED_ARCHITECTURES = ['llama', 'qwen2'] as const;
export type GgufArchitecture = (typeof SUPPORTED_ARCHITECTURES)[number];

export interface DecoderArchitecture {
  readonly architecture: GgufArchitecture;
  readonly numLayers: number;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numHeads: number;
  readonly numKvHeads: number;
  readonly headDim: number;
  readonly vocabSize: number;
  readonly contextLength: number;
  readonly rmsNormEps: number;
  readonly ropeBase: number;
  /** Positions are divided by this before RoPE (linear scaling); 1 when the file sets none. */
  readonly ropeLinearFactor: number;
  /**
   * How the file's Q and K rows are laid out for RoPE. llama.cpp's converter permutes a llama model's Q/K rows so
   * that each rotated pair is adjacent ('interleaved', its rope mode 0); qwen2 keeps Hugging Face's halves
   * ('halves', NeoX mode). The ONNX decoder rotates halves, so interleaved rows are put back first.
   */
  readonly ropeLayout: 'interleaved' | 'halves';
}

function unsupported(path: string, what: string): ChorusError {
  return new ChorusError(ErrorCodes.GGUF_UNSUPPORTED, `${path}: ${what}`);
}

function numberAt(file: GgufFile, key: string, fallback?: number): number {
  const value: GgufValue | undefined = file.metadata.get(key);
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number') {
    const found = value === undefined ? 'is missing' : `is ${Array.isArray(value) ? 'an array' : typeof value}`;
    throw new ChorusError(ErrorCodes.GGUF_INVALID, `${file.path}: metadata ${key} ${found} (a number is expected)`);
  }
  return value;
}

function ropeLinearFactor(file: GgufFile, arch: string): number {
  const type = file.metadata.get(`${arch}.rope.scaling.type`);
  const factor = numberAt(file, `${arch}.rope.scaling.factor`, 1);
  if (type === undefined || type === 'none') {
    if (factor !== 1 && type === undefined)
      throw unsupported(file.path, `${arch}.rope.scaling.factor is ${factor} with no scaling type`);
    return 1;
  }
  if (type === 'linear') return factor;
  throw unsupported(file.path, `RoPE scaling "${String(type)}" is not supported (only none and linear)`);
}

export function readArchitecture(file: GgufFile): DecoderArchitecture {
  const arch = file.metadata.get('general.architecture');
  if (typeof arch !== 'string' || !(SUPPORTED_ARCHITECTURES as readonly string[]).includes(arch)) {
    throw unsupported(
      file.path,
      `architecture ${JSON.stringify(arch)} is not supported; Chorus converts ${SUPPORTED_ARCHITECTURES.join(', ')}`,
    );
  }
  const hiddenSize = numberAt(file, `${arch}.embedding_length`);
  const numHeads = numberAt(file, `${arch}.attention.head_count`);
  const kvValue = file.metadata.get(`${arch}.attention.head_count_kv`);
  if (Array.isArray(kvValue)) throw unsupported(file.path, 'per-layer KV head counts are not supported');
  const numKvHeads = numberAt(file, `${arch}.attention.head_count_kv`, numHeads);
  const headDim = numberAt(file, `${arch}.attention.key_length`, hiddenSize / numHeads);
  const valueDim = numberAt(file, `${arch}.attention.value_length`, headDim);
  const ropeDim = numberAt(file, `${arch}.rope.dimension_count`, headDim);
  if (!Number.isInteger(headDim) || headDim % 2 !== 0 || valueDim !== headDim)
    throw unsupported(
      file.path,
      `head size ${headDim} (values ${valueDim}) must be even and equal for keys and values`,
    );
  if (ropeDim !== headDim) throw unsupported(file.path, `partial rotary (${ropeDim} of ${headDim}) is not supported`);
  if (numHeads % numKvHeads !== 0)
    throw unsupported(file.path, `${numHeads} heads are not a multiple of ${numKvHeads} KV heads`);
  if (file.tensor('rope_freqs.weight'))
    throw unsupported(
      file.path,
      'per-dimension RoPE frequency factors (rope_freqs, Llama 3.1 style) are not supported',
    );
  const tokens = file.metadata.get('tokenizer.ggml.tokens');
  return {
    architecture: arch as GgufArchitecture,
    numLayers: numberAt(file, `${arch}.block_count`),
    hiddenSize,
    intermediateSize: numberAt(file, `${arch}.feed_forward_length`),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: numberAt(file, `${arch}.vocab_size`, Array.isArray(tokens) ? tokens.length : undefined),
    contextLength: numberAt(file, `${arch}.context_length`),
    rmsNormEps: numberAt(file, `${arch}.attention.layer_norm_rms_epsilon`),
    ropeBase: numberAt(file, `${arch}.rope.freq_base`, 10000),
    ropeLinearFactor: ropeLinearFactor(file, arch),
    ropeLayout: arch === 'llama' ? 'interleaved' : 'halves',
  };
}
