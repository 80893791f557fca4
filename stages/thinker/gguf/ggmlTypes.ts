/**
 * ggml tensor types: the block size and bytes per block of every type a GGUF may hold (so any file's header can be
 * laid out), and float32 dequantization for the ones Chorus converts. A block of `blockSize` values is stored in
 * `typeSize` bytes; the layouts are llama.cpp's (ggml-common.h), checked value for value against the `gguf` Python
 * package's dequantize in test/model/gguf/dequantize.test.ts.
 */
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import { float16ToFloat32 } from './float16.ts';

type Dequantize = (src: Uint8Array, out: Float32Array) => void;

export interface GgmlType {
  readonly id: number;
  readonly name: string;
  readonly blockSize: number;
  readonly typeSize: number;
  /** Null for a type Chorus reads the layout of but does not convert. */
  readonly dequantize: Dequantize | null;
}

const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength);
const f16At = (v: DataView, at: number) => float16ToFloat32(v.getUint16(at, true));

function f32(src: Uint8Array, out: Float32Array): void {
  new Uint8Array(out.buffer, out.byteOffset, out.byteLength).set(src);
}

function f16(src: Uint8Array, out: Float32Array): void {
  const v = view(src);
  for (let i = 0; i < out.length; i++) out[i] = f16At(v, 2 * i);
}

function bf16(src: Uint8Array, out: Float32Array): void {
  const bits = new Uint32Array(out.buffer, out.byteOffset, out.length);
  const v = view(src);
  for (let i = 0; i < out.length; i++) bits[i] = v.getUint16(2 * i, true) << 16;
}

/** Q4_0: f16 scale, 16 bytes of nibbles (low nibbles are values 0-15, high 16-31); x = (q - 8) * d. */
function q4_0(src: Uint8Array, out: Float32Array): void {
  const v = view(src);
  for (let b = 0, o = 0; o < out.length; b += 18, o += 32) {
    const d = f16At(v, b);
    for (let j = 0; j < 16; j++) {
      const q = src[b + 2 + j];
      out[o + j] = ((q & 15) - 8) * d;
      out[o + j + 16] = ((q >> 4) - 8) * d;
    }
  }
}

/** Q4_1: f16 scale and f16 minimum, nibbles as Q4_0; x = q * d + m. */
function q4_1(src: Uint8Array, out: Float32Array): void {
  const v = view(src);
  for (let b = 0, o = 0; o < out.length; b += 20, o += 32) {
    const d = f16At(v, b);
    const m = f16At(v, b + 2);
    for (let j = 0; j < 16; j++) {
      const q = src[b + 4 + j];
      out[o + j] = (q & 15) * d + m;
      out[o + j + 16] = (q >> 4) * d + m;
    }
  }
}

/** Q5_0 / Q5_1: as Q4_0 / Q4_1 with a fifth bit per value from a u32 (bit j: value j). */
function q5(withMin: boolean): Dequantize {
  const size = withMin ? 24 : 22;
  return (src, out) => {
    const v = view(src);
    for (let b = 0, o = 0; o < out.length; b += size, o += 32) {
      const d = f16At(v, b);
      const m = withMin ? f16At(v, b + 2) : 0;
      const at = withMin ? b + 4 : b + 2;
      const qh = v.getUint32(at, true);
      const offset = withMin ? 0 : 16;
      for (let j = 0; j < 16; j++) {
        const q = src[at + 4 + j];
        const lo = (q & 15) | (((qh >>> j) & 1) << 4);
        const hi = (q >> 4) | (((qh >>> (j + 16)) & 1) << 4);
        out[o + j] = (lo - offset) * d + m;
        out[o + j + 16] = (hi - offset) * d + m;
      }
    }
  };
}

/** Q8_0: f16 scale, 32 int8; x = q * d. */
function q8_0(src: Uint8Array, out: Float32Array): void {
  const v = view(src);
  for (let b = 0, o = 0; o < out.length; b += 34, o += 32) {
    const d = f16At(v, b);
    for (let j = 0; j < 32; j++) out[o + j] = v.getInt8(b + 2 + j) * d;
  }
}

/** The 6-bit scale and minimum of sub-block j of a Q4_K/Q5_K super-block (12 packed bytes at `at`). */
function scaleMinK4(src: Uint8Array, at: number, j: number): [number, number] {
  if (j < 4) return [src[at + j] & 63, src[at + j + 4] & 63];
  const s = (src[at + j + 4] & 15) | ((src[at + j - 4] >> 6) << 4);
  const m = (src[at + j + 4] >> 4) | ((src[at + j] >> 6) << 4);
  return [s, m];
}

/**
 * Q4_K / Q5_K: super-blocks of 256 = 8 sub-blocks of 32, f16 d and dmin, 12 bytes of 6-bit scales and minimums,
 * (Q5_K: 32 bytes of fifth bits), 128 bytes of nibbles; x = d * scale * q - dmin * min.
 */
function qK(fiveBit: boolean): Dequantize {
  const size = fiveBit ? 176 : 144;
  return (src, out) => {
    const v = view(src);
    for (let b = 0, o = 0; o < out.length; b += size, o += 256) {
      const d = f16At(v, b);
      const dmin = f16At(v, b + 2);
      const qh = b + 16;
      const qs = fiveBit ? b + 48 : b + 16;
      for (let j = 0; j < 4; j++) {
        const [s1, m1] = scaleMinK4(src, b + 4, 2 * j);
        const [s2, m2] = scaleMinK4(src, b + 4, 2 * j + 1);
        for (let l = 0; l < 32; l++) {
          const q = src[qs + 32 * j + l];
          const h = fiveBit ? src[qh + l] : 0;
          out[o + 64 * j + l] = d * s1 * ((q & 15) + (((h >> (2 * j)) & 1) << 4)) - dmin * m1;
          out[o + 64 * j + 32 + l] = d * s2 * ((q >> 4) + (((h >> (2 * j + 1)) & 1) << 4)) - dmin * m2;
        }
      }
    }
  };
}

/** Q6_K: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16 int8 scales, f16 d; x = d * scale * (q - 32). */
function q6_K(src: Uint8Array, out: Float32Array): void {
  const v = view(src);
  for (let b = 0, o = 0; o < out.length; b += 210, o += 256) {
    const d = f16At(v, b + 208);
    for (let half = 0; half < 2; half++) {
      const ql = b + 64 * half;
      const qh = b + 128 + 32 * half;
      const sc = b + 192 + 8 * half;
      const y = o + 128 * half;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = src[qh + l];
        const q1 = ((src[ql + l] & 15) | ((h & 3) << 4)) - 32;
        const q2 = ((src[ql + l + 32] & 15) | (((h >> 2) & 3) << 4)) - 32;
        const q3 = ((src[ql + l] >> 4) | (((h >> 4) & 3) << 4)) - 32;
        const q4 = ((src[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)) - 32;
        out[y + l] = d * v.getInt8(sc + is) * q1;
        out[y + l + 32] = d * v.getInt8(sc + is + 2) * q2;
        out[y + l + 64] = d * v.getInt8(sc + is + 4) * q3;
        out[y + l + 96] = d * v.getInt8(sc + is + 6) * q4;
      }
    }
  }
}

/** [id, name, blockSize, typeSize, dequantize]: every type of ggml's enum that a model file holds. */
const TABLE: [number, string, number, number, Dequantize | null][] = [
  [0, 'F32', 1, 4, f32],
  [1, 'F16', 1, 2, f16],
  [2, 'Q4_0', 32, 18, q4_0],
  [3, 'Q4_1', 32, 20, q4_1],
  [6, 'Q5_0', 32, 22, q5(false)],
  [7, 'Q5_1', 32, 24, q5(true)],
  [8, 'Q8_0', 32, 34, q8_0],
  [9, 'Q8_1', 32, 40, null],
  [10, 'Q2_K', 256, 84, null],
  [11, 'Q3_K', 256, 110, null],
  [12, 'Q4_K', 256, 144, qK(false)],
  [13, 'Q5_K', 256, 176, qK(true)],
  [14, 'Q6_K', 256, 210, q6_K],
  [15, 'Q8_K', 256, 292, null],
  [16, 'IQ2_XXS', 256, 66, null],
  [17, 'IQ2_XS', 256, 74, null],
  [18, 'IQ3_XXS', 256, 98, null],
  [19, 'IQ1_S', 256, 50, null],
  [20, 'IQ4_NL', 32, 18, null],
  [21, 'IQ3_S', 256, 110, null],
  [22, 'IQ2_S', 256, 82, null],
  [23, 'IQ4_XS', 256, 136, null],
  [24, 'I8', 1, 1, null],
  [25, 'I16', 1, 2, null],
  [26, 'I32', 1, 4, null],
  [27, 'I64', 1, 8, null],
  [28, 'F64', 1, 8, null],
  [29, 'IQ1_M', 256, 56, null],
  [30, 'BF16', 1, 2, bf16],
  [34, 'TQ1_0', 256, 54, null],
  [35, 'TQ2_0', 256, 66, null],
];

const TYPES = new Map<number, GgmlType>(
  TABLE.map(([id, name, blockSize, typeSize, dequantize]) => [id, { id, name, blockSize, typeSize, dequantize }]),
);

export const CONVERTED_TYPES: readonly string[] = TABLE.filter((t) => t[4] !== null).map((t) => t[1]);

export function ggmlType(id: number, tensor: string, path: string): GgmlType {
  const type = TYPES.get(id);
  if (!type) {
    throw new ChorusError(
      ErrorCodes.GGUF_UNSUPPORTED,
      `${path}: tensor ${tensor} has ggml type ${id}, which Chorus does not know; re-quantize it to one of ` +
        CONVERTED_TYPES.join(', '),
    );
  }
  return type;
}

export function tensorByteLength(type: GgmlType, dims: readonly number[], tensor: string, path: string): number {
  const count = dims.reduce((a, b) => a * b, 1);
  if (dims[0] % type.blockSize !== 0) {
    throw new ChorusError(
      ErrorCodes.GGUF_INVALID,
      `${path}: tensor ${tensor} of type ${type.name} has rows of ${dims[0]} values, ` +
        `not whole ${type.blockSize}-value ` +
        'blocks',
    );
  }
  return (count / type.blockSize) * type.typeSize;
}

/** The tensor's values as float32, in ggml order (ne[0] fastest). */
export function dequantize(type: GgmlType, bytes: Uint8Array, count: number, tensor: string): Float32Array {
  if (!type.dequantize) {
    throw new ChorusError(
      ErrorCodes.GGUF_UNSUPPORTED,
      `tensor ${tensor} is quantized as ${type.name}, which Chorus does not convert; supported: ` +
        `${CONVERTED_TYPES.join(', ')} (re-quantize the model, e.g. with llama-quantize, to one of them)`,
    );
  }
  const out = new Float32Array(count);
  type.dequantize(bytes, out);
  return out;
}
