/**
 * GGUF's 4-bit weights kept 4-bit, in the layout of onnxruntime's MatMulNBits (stages/generator/q4.ts).
 * Exact for the types it takes: Q4_0 (x = (q - 8) d: zero point 8) and Q4_1 (x = q d + m: zero point 0, and the
 * block minimum m added by the graph as sum(x over the block) * m, a small MatMul beside the 4-bit one). A GGUF row
 * of K values is already N-major in blocks along K, so rows only have their nibbles reordered (GGUF keeps value j
 * in byte j's low nibble and j + 16 in its high).
 */
import type { GgufWeights } from './ggufWeights.ts';
import { float16ToFloat32 } from './float16.ts';
import { Q4_BLOCK, Q4_BLOCK_BYTES, type Q4Matrix } from '../../generator/q4.ts';

const BLOCK_BYTES = Q4_BLOCK_BYTES;

const LAYOUTS: Readonly<Record<string, { bytes: number; withMin: boolean }>> = {
  Q4_0: { bytes: 18, withMin: false },
  Q4_1: { bytes: 20, withMin: true },
};

/** The matrix kept 4-bit, or null when its type has no exact MatMulNBits form (then the caller dequantizes). */
export function readQ4(w: GgufWeights, name: string, rows: number, cols: number): Q4Matrix | null {
  if (cols % Q4_BLOCK !== 0) return null;
  const { type, bytes } = w.raw(name, [cols, rows]);
  const layout = LAYOUTS[type.name];
  if (!layout) return null;
  const blocks = (rows * cols) / Q4_BLOCK;
  const m: Q4Matrix = {
    rows,
    cols,
    packed: new Uint8Array(blocks * BLOCK_BYTES),
    scales: new Float32Array(blocks),
    zeros: new Uint8Array(blocks).fill(layout.withMin ? 0 : 8),
    mins: new Float32Array(blocks),
  };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const quants = layout.withMin ? 4 : 2;
  for (let b = 0; b < blocks; b++) {
    const at = b * layout.bytes;
    m.scales[b] = float16ToFloat32(view.getUint16(at, true));
    if (layout.withMin) m.mins[b] = float16ToFloat32(view.getUint16(at + 2, true));
    // Values 2i and 2i + 1 into byte i; GGUF holds value v < 16 in byte v's low nibble, v >= 16 in byte v-16's high.
    const q = at + quants;
    const out = b * BLOCK_BYTES;
    for (let i = 0; i < 8; i++) m.packed[out + i] = (bytes[q + 2 * i] & 15) | ((bytes[q + 2 * i + 1] & 15) << 4);
    for (let i = 8; i < 16; i++) m.packed[out + i] = (bytes[q + 2 * i - 16] >> 4) | (bytes[q + 2 * i - 15] & 0xf0);
  }
  return m;
}

/** The rows reordered: out row r is `m`'s row fromRow(r). */
export function reorderRows(m: Q4Matrix, fromRow: (r: number) => number): Q4Matrix {
  const per = m.cols / Q4_BLOCK;
  const out = { ...m, packed: new Uint8Array(m.packed.length), scales: new Float32Array(m.scales.length) };
  const zeros = new Uint8Array(m.zeros.length);
  const mins = new Float32Array(m.mins.length);
  for (let r = 0; r < m.rows; r++) {
    const from = fromRow(r);
    out.packed.set(m.packed.subarray(from * per * BLOCK_BYTES, (from + 1) * per * BLOCK_BYTES), r * per * BLOCK_BYTES);
    out.scales.set(m.scales.subarray(from * per, (from + 1) * per), r * per);
    zeros.set(m.zeros.subarray(from * per, (from + 1) * per), r * per);
    mins.set(m.mins.subarray(from * per, (from + 1) * per), r * per);
  }
  return { ...out, zeros, mins };
}

/** Every value times `k` (scales and minimums scaled; the quantized values and zero points unchanged). */
export function scaled(m: Q4Matrix, k: number): Q4Matrix {
  return { ...m, scales: m.scales.map((s) => s * k), mins: m.mins.map((x) => x * k) };
}

const bytes = (n: number) => new Uint8Array(n);
const floats = (n: number) => new Float32Array(n);

/** Matrices of the same width stacked (their rows one after another: a fused projection). */
export function stackRows(parts: readonly Q4Matrix[]): Q4Matrix {
  const cat = <T extends Uint8Array | Float32Array>(pick: (m: Q4Matrix) => T, make: (n: number) => T): T => {
    const out = make(parts.reduce((n, m) => n + pick(m).length, 0));
    let at = 0;
    for (const m of parts) {
      out.set(pick(m), at);
      at += pick(m).length;
    }
    return out;
  };
  return {
    rows: parts.reduce((n, m) => n + m.rows, 0),
    cols: parts[0].cols,
    packed: cat((m) => m.packed, bytes),
    scales: cat((m) => m.scales, floats),
    zeros: cat((m) => m.zeros, bytes),
    mins: cat((m) => m.mins, floats),
  };
}

/** The block minimums as a [blocks, rows] right-hand side: sum(x over block b) times it adds each row's mins. */
export function minsMatrix(m: Q4Matrix): Float32Array | null {
  if (m.mins.every((x) => x === 0)) return null;
  const per = m.cols / Q4_BLOCK;
  const out = new Float32Array(per * m.rows);
  for (let r = 0; r < m.rows; r++) for (let b = 0; b < per; b++) out[b * m.rows + r] = m.mins[r * per + b];
  return out;
}
