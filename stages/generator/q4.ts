/**
 * 4-bit weights as onnxruntime's MatMulNBits (com.microsoft) holds them: B [N, K / 32, 16] bytes (value 2i of a
 * block in byte i's low nibble, 2i + 1 in its high), a float scale and a 4-bit zero point per block of 32 values
 * along K. Two sources fill them: a GGUF file's Q4_0 / Q4_1 matrices as they are (stages/thinker/gguf/q4Weights.ts),
 * and the generator's float weights, quantized here as Q4_0 does (symmetric: x = (q - 8) * scale).
 */
import type { GraphBuilder } from './GraphBuilder.ts';

export const Q4_BLOCK = 32;
export const Q4_BLOCK_BYTES = Q4_BLOCK / 2;

/** A [rows, cols] matrix (PyTorch's [out, in]) as MatMulNBits holds it. */
export interface Q4Matrix {
  readonly rows: number;
  readonly cols: number;
  /** [rows, cols / 32, 16] */
  readonly packed: Uint8Array;
  /** [rows * cols / 32] */
  readonly scales: Float32Array;
  /** The zero point of each block (8 for Q4_0, 0 for Q4_1). */
  readonly zeros: Uint8Array;
  /** Each block's minimum (Q4_1; 0 for Q4_0). */
  readonly mins: Float32Array;
}

/**
 * A float MatMul right-hand side `values` ([k, n] row-major: in, out) as a symmetric 4-bit [n, k] matrix: each block
 * of 32 inputs of an output scaled so its value of largest magnitude maps to -8 exactly, the rest rounded to the
 * nearest step (one of the other sign near the peak's magnitude clamped at 7), zero point 8.
 */
export function quantizeQ4(values: Float32Array, k: number, n: number): Q4Matrix {
  if (k % Q4_BLOCK !== 0) throw new Error(`a 4-bit matrix needs its input size (${k}) in blocks of ${Q4_BLOCK}`);
  const per = k / Q4_BLOCK;
  const m: Q4Matrix = {
    rows: n,
    cols: k,
    packed: new Uint8Array(n * per * Q4_BLOCK_BYTES),
    scales: new Float32Array(n * per),
    zeros: new Uint8Array(n * per).fill(8),
    mins: new Float32Array(n * per),
  };
  const block = new Float32Array(Q4_BLOCK);
  for (let r = 0; r < n; r++) {
    for (let b = 0; b < per; b++) {
      let peak = 0;
      for (let i = 0; i < Q4_BLOCK; i++) {
        block[i] = values[(b * Q4_BLOCK + i) * n + r];
        if (Math.abs(block[i]) > Math.abs(peak)) peak = block[i];
      }
      // As Q4_0: the value of largest magnitude becomes -8 exactly, so the block's range is used to its end.
      const scale = peak / -8;
      const inverse = scale === 0 ? 0 : 1 / scale;
      const at = (r * per + b) * Q4_BLOCK_BYTES;
      m.scales[r * per + b] = scale;
      const q = (i: number) => Math.min(15, Math.max(0, Math.round(block[i] * inverse) + 8));
      for (let i = 0; i < Q4_BLOCK_BYTES; i++) m.packed[at + i] = q(2 * i) | (q(2 * i + 1) << 4);
    }
  }
  return m;
}

/** Each value of `m` back as a float, [k, n] row-major (a MatMul's right-hand side): what the 4-bit graph computes. */
export function dequantizeQ4(m: Q4Matrix): Float32Array {
  const per = m.cols / Q4_BLOCK;
  const out = new Float32Array(m.rows * m.cols);
  for (let r = 0; r < m.rows; r++) {
    for (let b = 0; b < per; b++) {
      const at = (r * per + b) * Q4_BLOCK_BYTES;
      const [scale, zero, min] = [m.scales[r * per + b], m.zeros[r * per + b], m.mins[r * per + b]];
      for (let i = 0; i < Q4_BLOCK; i++) {
        const q = (m.packed[at + (i >> 1)] >> ((i & 1) * 4)) & 15;
        out[(b * Q4_BLOCK + i) * m.rows + r] = (q - zero) * scale + min;
      }
    }
  }
  return out;
}

/** The zero points packed two to a byte per row ([rows, ceil(blocks / 2)]), as MatMulNBits reads them. */
export function packedZeros(m: Q4Matrix): Uint8Array {
  const per = m.cols / Q4_BLOCK;
  const perRow = Math.ceil(per / 2);
  const out = new Uint8Array(m.rows * perRow);
  for (let r = 0; r < m.rows; r++)
    for (let b = 0; b < per; b++) out[r * perRow + (b >> 1)] |= m.zeros[r * per + b] << ((b & 1) * 4);
  return out;
}

/**
 * x [B, S, K] times the 4-bit [N, K] matrix (its block minimums not added: the caller's, for Q4_1), with float
 * products (accuracy_level 0: each block dequantized). Level 4 (x rounded to 8 bits per block, integer products) is
 * a third faster on a decode step, but a row's result then depends on the batch it runs in (bench/NOTES.md, "Weights
 * in 4 bits"), and Chorus keeps an answer the same whatever it is batched with.
 */
export function q4MatMul(g: GraphBuilder, x: string, name: string, m: Q4Matrix): string {
  const per = m.cols / Q4_BLOCK;
  const zeros = packedZeros(m);
  const inputs = [
    x,
    g.initializer(`${name}.q4`, 'uint8', [m.rows, per, Q4_BLOCK_BYTES], m.packed),
    g.initializer(`${name}.scales`, 'float32', [m.rows * per], m.scales),
    g.initializer(`${name}.zeros`, 'uint8', [zeros.length], zeros),
  ];
  const attrs = { K: m.cols, N: m.rows, bits: 4, block_size: Q4_BLOCK };
  return g.node('MatMulNBits', inputs, attrs, 1, 'com.microsoft')[0];
}
