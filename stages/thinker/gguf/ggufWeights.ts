/**
 * A GGUF's tensors as float32 in the shapes the ONNX decoder wants: each named tensor is checked against the shape
 * the architecture implies (a mismatch names the tensor, both shapes and the file), dequantized, and laid out as the
 * right-hand side of a MatMul ([in, out], several matrices side by side when the graph fuses them).
 */
import { ChorusError, ErrorCodes } from '../../../src/common/errors.ts';
import { dequantize, type GgmlType } from './ggmlTypes.ts';
import type { GgufFile } from './GgufFile.ts';

export class GgufWeights {
  constructor(private readonly file: GgufFile) {}

  has(name: string): boolean {
    return this.file.tensor(name) !== undefined;
  }

  /** The tensor's values in ggml order; `dims` is ggml's (ne[0] first). */
  read(name: string, dims: readonly number[]): Float32Array {
    const { type, bytes } = this.raw(name, dims);
    const count = dims.reduce((a, b) => a * b, 1);
    return dequantize(type, bytes, count, `${name} in ${this.file.path}`);
  }

  /** The tensor's type and its bytes as the file stores them (still quantized), its dims checked. */
  raw(name: string, dims: readonly number[]): { type: GgmlType; bytes: Uint8Array } {
    const info = this.file.tensor(name);
    if (!info) {
      throw new ChorusError(
        ErrorCodes.GGUF_INVALID,
        `${this.file.path} has no tensor ${name}, which its architecture needs`,
      );
    }
    const same = info.dims.length === dims.length && info.dims.every((d, i) => d === dims[i]);
    if (!same) {
      throw new ChorusError(
        ErrorCodes.GGUF_INVALID,
        `${this.file.path}: tensor ${name} has dims [${info.dims.join(', ')}], ` +
          `the metadata implies [${dims.join(', ')}]`,
      );
    }
    return { type: info.type, bytes: this.file.readTensor(info) };
  }

  /** A [rows, cols] weight (PyTorch's [out, in]; ggml dims [cols, rows]), row-major. */
  matrix(name: string, rows: number, cols: number): Float32Array {
    return this.read(name, [cols, rows]);
  }
}

/**
 * Undoes llama.cpp's Q/K row permutation for a llama model. Its converter reorders each head's rows so the two
 * halves Hugging Face rotates together become adjacent pairs: file row h*hd + 2i + j holds Hugging Face row
 * h*hd + j*hd/2 + i (i < hd/2, j in {0, 1}). Putting them back lets the graph rotate halves (NeoX style).
 * Works on a bias too (cols = 1).
 */
export function unpermuteRows(m: Float32Array, numHeads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(m.length);
  const half = headDim / 2;
  for (let h = 0; h < numHeads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (h * headDim + 2 * i + j) * cols;
        const to = (h * headDim + j * half + i) * cols;
        out.set(m.subarray(from, from + cols), to);
      }
    }
  }
  return out;
}

/** One [rows, cols] matrix, scaled, written transposed into columns [colOffset, colOffset + rows) of `dst`. */
export function transposeInto(
  dst: Float32Array,
  dstCols: number,
  colOffset: number,
  src: Float32Array,
  rows: number,
  cols: number,
  scale = 1,
): void {
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) dst[c * dstCols + colOffset + r] = src[base + c] * scale;
  }
}
