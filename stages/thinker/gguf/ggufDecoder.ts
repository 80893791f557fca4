/**
 * GGUF (llama / qwen2) -> an ONNX decoder with Hugging Face Optimum's signature, weights dequantized to float32 or
 * (form 'q4') Q4_0/Q4_1 projections kept 4-bit for onnxruntime's MatMulNBits:
 *   input_ids [B, S] int64, attention_mask [B, past+S] int64, position_ids [B, S] int64,
 *   past_key_values.N.key|value [B, kvHeads, past, headDim]
 *   -> logits [B, 1, V] (the last position's: all a step samples from; the runner takes the last row of either
 *      form), present.N.key|value [B, kvHeads, past+S, headDim].
 *
 * Per layer, as Hugging Face's LlamaForCausalLM / Qwen2ForCausalLM compute it: RMSNorm, fused q|k|v projection
 * (qwen2's biases added), RoPE on q and k (rotate-halves form, base and linear scaling from the metadata),
 * grouped-query attention (query heads grouped over their shared KV head, so keys and values are never copied per
 * query head), output projection, RMSNorm, SwiGLU (fused gate|up), down projection. The head reuses the token
 * embedding when the file has no output.weight (tied, as SmolLM2).
 */
import { GraphBuilder } from '../../generator/GraphBuilder.ts';
import type { BuildProgressStep } from '../../models/modelCache.ts';
import { yieldToLoop } from '../../generator/weights.ts';
import type { DecoderArchitecture } from './ggufArchitecture.ts';
import { GgufWeights, transposeInto, unpermuteRows } from './ggufWeights.ts';
import { Q4_BLOCK, q4MatMul, type Q4Matrix } from '../../generator/q4.ts';
import { minsMatrix, readQ4, reorderRows, scaled, stackRows } from './q4Weights.ts';

const MASKED_SCORE = -1e9; // finite: a padded query row (every key masked) gives a uniform softmax, not NaN

/**
 * How the decoder holds the file's weights: dequantized to float32, or Q4_0/Q4_1 matrices kept 4-bit for
 * onnxruntime's MatMulNBits (exact for those types; other types and the embedding stay float32).
 */
export type GgufWeightForm = 'float32' | 'q4';
export const GGUF_WEIGHT_FORMS: readonly GgufWeightForm[] = ['float32', 'q4'];

interface Ctx {
  readonly g: GraphBuilder;
  readonly a: DecoderArchitecture;
  readonly w: GgufWeights;
  readonly form: GgufWeightForm;
}

function rmsNorm(c: Ctx, x: string, weightName: string): string {
  const { g, a } = c;
  const weight = g.initializer(weightName, 'float32', [a.hiddenSize], c.w.read(weightName, [a.hiddenSize]));
  const meanSquare = g.op('ReduceMean', [g.op('Mul', [x, x])], { axes: [-1], keepdims: 1 });
  const rms = g.op('Sqrt', [g.op('Add', [meanSquare, g.constF32([a.rmsNormEps])])]);
  return g.op('Mul', [g.op('Div', [x, rms]), weight]);
}

/** cos and sin [B, 1, S, headDim] for the rotate-halves RoPE, from position_ids. */
function ropeTables(c: Ctx): { cos: string; sin: string } {
  const { g, a } = c;
  const half = a.headDim / 2;
  const invFreq = Array.from({ length: half }, (_, i) => a.ropeBase ** ((-2 * i) / a.headDim) / a.ropeLinearFactor);
  const pos = g.op('Cast', ['position_ids'], { to: 1 /* FLOAT */ });
  const angles = g.op('Mul', [g.op('Unsqueeze', [pos, g.constI64([-1])]), g.constF32(invFreq)]); // [B, S, half]
  const both = g.op('Unsqueeze', [g.op('Concat', [angles, angles], { axis: -1 }), g.constI64([1])]);
  return { cos: g.op('Cos', [both]), sin: g.op('Sin', [both]) };
}

function rotate(c: Ctx, x: string, rope: { cos: string; sin: string }): string {
  const { g, a } = c;
  const half = a.headDim / 2;
  const [x1, x2] = g.node('Split', [x, g.constI64([half, half])], { axis: -1 }, 2);
  const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: -1 });
  return g.op('Add', [g.op('Mul', [x, rope.cos]), g.op('Mul', [rotated, rope.sin])]);
}

/** allowed [B, 1, 1, S, T]: key j is real (mask 1) and not after query i (j <= past + i). */
function attentionAllowed(g: GraphBuilder): string {
  const one = g.constI64([1], []);
  const total = g.op('Gather', [g.op('Shape', ['attention_mask']), one], { axis: 0 });
  const newLen = g.op('Gather', [g.op('Shape', ['input_ids']), one], { axis: 0 });
  const keyIdx = g.op('Range', [g.constI64([0], []), total, one]);
  const queryIdx = g.op('Range', [g.op('Sub', [total, newLen]), total, one]);
  const causal = g.op('LessOrEqual', [
    g.op('Unsqueeze', [keyIdx, g.constI64([0])]),
    g.op('Unsqueeze', [queryIdx, g.constI64([1])]),
  ]);
  const real = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: 9 /* BOOL */ }), g.constI64([1, 2, 3])]);
  return g.op('And', [causal, real]);
}

interface QkvPart {
  readonly name: string;
  readonly heads: number;
  readonly scale: number;
  readonly rope: boolean;
}

/** q (scaled by 1/sqrt(hd)) | k | v, each with its head count, in the order the fused projection stacks them. */
function qkvParts(a: DecoderArchitecture): QkvPart[] {
  return [
    { name: 'attn_q', heads: a.numHeads, scale: 1 / Math.sqrt(a.headDim), rope: true },
    { name: 'attn_k', heads: a.numKvHeads, scale: 1, rope: true },
    { name: 'attn_v', heads: a.numKvHeads, scale: 1, rope: false },
  ];
}

/** Whether a part's rows are in llama.cpp's interleaved RoPE order (put back to rotate halves). */
const permuted = (a: DecoderArchitecture, part: QkvPart) => part.rope && a.ropeLayout === 'interleaved';

/** [D, (H + 2K) * hd]: q | k | v side by side, RoPE rows restored. */
function qkvWeight(c: Ctx, p: string): Float32Array {
  const { a, w } = c;
  const d = a.hiddenSize;
  const cols = (a.numHeads + 2 * a.numKvHeads) * a.headDim;
  const weight = new Float32Array(d * cols);
  let offset = 0;
  for (const part of qkvParts(a)) {
    const rows = part.heads * a.headDim;
    let m = w.matrix(`${p}.${part.name}.weight`, rows, d);
    if (permuted(a, part)) m = unpermuteRows(m, part.heads, a.headDim, d);
    transposeInto(weight, cols, offset, m, rows, d, part.scale);
    offset += rows;
  }
  return weight;
}

/** The fused projection's bias when the file has one (qwen2), scaled and restored as the weight. */
function qkvBias(c: Ctx, p: string): Float32Array | null {
  const { a, w } = c;
  const parts = qkvParts(a);
  if (!parts.some((part) => w.has(`${p}.${part.name}.bias`))) return null;
  const bias = new Float32Array((a.numHeads + 2 * a.numKvHeads) * a.headDim);
  let offset = 0;
  for (const part of parts) {
    const rows = part.heads * a.headDim;
    if (w.has(`${p}.${part.name}.bias`)) {
      let b = w.read(`${p}.${part.name}.bias`, [rows]);
      if (permuted(a, part)) b = unpermuteRows(b, part.heads, a.headDim, 1);
      for (let i = 0; i < rows; i++) bias[offset + i] = b[i] * part.scale;
    }
    offset += rows;
  }
  return bias;
}

/** The fused projection kept 4-bit, or null when a part's type has no exact 4-bit form. */
function qkvQ4(c: Ctx, p: string): Q4Matrix | null {
  const { a, w } = c;
  const hd = a.headDim;
  const parts: Q4Matrix[] = [];
  for (const part of qkvParts(a)) {
    let m = readQ4(w, `${p}.${part.name}.weight`, part.heads * hd, a.hiddenSize);
    if (!m) return null;
    // File row h*hd + 2i + j holds Hugging Face row h*hd + j*hd/2 + i (see unpermuteRows).
    const fromRow = (r: number) => {
      const within = r % hd;
      return r - within + 2 * (within % (hd / 2)) + Math.floor(within / (hd / 2));
    };
    if (permuted(a, part)) m = reorderRows(m, fromRow);
    parts.push(part.scale === 1 ? m : scaled(m, part.scale));
  }
  return stackRows(parts);
}

/** The [out, in] matrices stacked and kept 4-bit, or null when one has no exact 4-bit form. */
function stackedQ4(c: Ctx, names: readonly string[], rows: number, cols: number): Q4Matrix | null {
  const parts = names.map((name) => readQ4(c.w, name, rows, cols));
  return parts.every((m) => m !== null) ? stackRows(parts as Q4Matrix[]) : null;
}

/** x [B, S, K] times a 4-bit [N, K] matrix: MatMulNBits, plus sum(x per block) times the block minimums (Q4_1). */
function q4Linear(c: Ctx, x: string, name: string, m: Q4Matrix): string {
  const { g } = c;
  const y = q4MatMul(g, x, name, m);
  const mins = minsMatrix(m);
  if (!mins) return y;
  const per = m.cols / Q4_BLOCK;
  const blocks = g.op('Reshape', [x, g.constI64([0, 0, per, Q4_BLOCK])]);
  const sums = g.op('ReduceSum', [blocks, g.constI64([-1])], { keepdims: 0 }); // [B, S, per]
  return g.op('Add', [y, g.op('MatMul', [sums, g.initializer(`${name}.mins`, 'float32', [per, m.rows], mins)])]);
}

/** x times the stacked [rows, cols] matrices: 4-bit where the form asks for it and the types allow, else float32. */
function linear(c: Ctx, x: string, fused: string, names: readonly string[], rows: number, cols: number): string {
  const q4 = c.form === 'q4' ? stackedQ4(c, names, rows, cols) : null;
  if (q4) return q4Linear(c, x, fused, q4);
  const weight = fusedMatmulWeight(c, names, rows, cols);
  return c.g.op('MatMul', [x, c.g.initializer(fused, 'float32', [cols, rows * names.length], weight)]);
}

/** Side-by-side [in, out1 + out2 + ...] of [out, in] matrices. */
function fusedMatmulWeight(c: Ctx, names: readonly string[], rows: number, cols: number): Float32Array {
  const out = new Float32Array(cols * rows * names.length);
  names.forEach((name, i) =>
    transposeInto(out, rows * names.length, i * rows, c.w.matrix(name, rows, cols), rows, cols),
  );
  return out;
}

function attention(c: Ctx, l: number, h: string, rope: { cos: string; sin: string }, allowed: string): string {
  const { g, a } = c;
  const p = `blk.${l}`;
  const { numHeads: H, numKvHeads: K, headDim: hd } = a;
  const group = H / K;
  const cols = (H + 2 * K) * hd;
  const q4 = c.form === 'q4' ? qkvQ4(c, p) : null;
  let proj = q4
    ? q4Linear(c, h, `${p}.attn_qkv.weight`, q4)
    : g.op('MatMul', [h, g.initializer(`${p}.attn_qkv.weight`, 'float32', [a.hiddenSize, cols], qkvWeight(c, p))]);
  const bias = qkvBias(c, p);
  if (bias) proj = g.op('Add', [proj, g.initializer(`${p}.attn_qkv.bias`, 'float32', [cols], bias)]);
  const [q, k, v] = g.node('Split', [proj, g.constI64([H * hd, K * hd, K * hd])], { axis: -1 }, 3);
  const heads = (x: string, n: number) =>
    g.op('Transpose', [g.op('Reshape', [x, g.constI64([0, 0, n, hd])])], { perm: [0, 2, 1, 3] }); // [B, n, S, hd]
  const keys = g.op(
    'Concat',
    [`past_key_values.${l}.key`, rotate(c, heads(k, K), rope)],
    { axis: 2 },
    `present.${l}.key`,
  );
  const values = g.op('Concat', [`past_key_values.${l}.value`, heads(v, K)], { axis: 2 }, `present.${l}.value`);
  // Query heads h = kv * group + r share KV head kv: [B, K, group, S, hd] against [B, K, 1, T, hd] (broadcast).
  const qGrouped = g.op('Reshape', [rotate(c, heads(q, H), rope), g.constI64([0, K, group, -1, hd])]);
  const unsqueezed = (x: string) => g.op('Unsqueeze', [x, g.constI64([2])]);
  const scores = g.op('MatMul', [qGrouped, g.op('Transpose', [unsqueezed(keys)], { perm: [0, 1, 2, 4, 3] })]);
  const probs = g.op('Softmax', [g.op('Where', [allowed, scores, g.constF32([MASKED_SCORE])])], { axis: -1 });
  const context = g.op('MatMul', [probs, unsqueezed(values)]); // [B, K, group, S, hd]
  const perHead = g.op('Reshape', [context, g.constI64([0, H, -1, hd])]); // [B, H, S, hd]
  const merged = g.op('Reshape', [g.op('Transpose', [perHead], { perm: [0, 2, 1, 3] }), g.constI64([0, 0, H * hd])]);
  return linear(c, merged, `${p}.attn_output.weight`, [`${p}.attn_output.weight`], a.hiddenSize, H * hd);
}

function feedForward(c: Ctx, l: number, h: string): string {
  const { g, a } = c;
  const p = `blk.${l}`;
  const I = a.intermediateSize;
  const gateUp = [`${p}.ffn_gate.weight`, `${p}.ffn_up.weight`];
  const both = linear(c, h, `${p}.ffn_gate_up.weight`, gateUp, I, a.hiddenSize);
  const [gate, up] = g.node('Split', [both, g.constI64([I, I])], { axis: -1 }, 2);
  const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]); // SiLU(gate) * up
  return linear(c, act, `${p}.ffn_down.weight`, [`${p}.ffn_down.weight`], a.hiddenSize, I);
}

function declareIo(c: Ctx): void {
  const { g, a } = c;
  g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  const past = ['batch_size', a.numKvHeads, 'past_sequence_length', a.headDim];
  const present = ['batch_size', a.numKvHeads, 'total_sequence_length', a.headDim];
  for (let l = 0; l < a.numLayers; l++) {
    for (const which of ['key', 'value']) {
      g.input(`past_key_values.${l}.${which}`, 'float32', past);
      g.output(`present.${l}.${which}`, 'float32', present);
    }
  }
  g.output('logits', 'float32', ['batch_size', 1, a.vocabSize]);
}

/** The decoder's ONNX bytes; progress after the embedding and after each layer. */
export async function buildGgufDecoder(
  a: DecoderArchitecture,
  weights: GgufWeights,
  progress: (s: BuildProgressStep) => void,
  form: GgufWeightForm = 'float32',
): Promise<Uint8Array> {
  const g = new GraphBuilder(`${a.architecture}-decoder`);
  const c: Ctx = { g, a, w: weights, form };
  const total = a.numLayers + 2;
  declareIo(c);
  const table = weights.matrix('token_embd.weight', a.vocabSize, a.hiddenSize);
  const embedding = g.initializer('token_embd.weight', 'float32', [a.vocabSize, a.hiddenSize], table);
  let x = g.op('Gather', [embedding, 'input_ids'], { axis: 0 });
  progress({ done: 1, total, what: 'token embedding' });
  await yieldToLoop();
  const rope = ropeTables(c);
  const allowed = attentionAllowed(g);
  for (let l = 0; l < a.numLayers; l++) {
    x = g.op('Add', [x, attention(c, l, rmsNorm(c, x, `blk.${l}.attn_norm.weight`), rope, allowed)]);
    x = g.op('Add', [x, feedForward(c, l, rmsNorm(c, x, `blk.${l}.ffn_norm.weight`))]);
    progress({ done: 2 + l, total, what: `layer ${l}` });
    await yieldToLoop();
  }
  // The head runs on the last position only, as a Gemm against the [V, D] table (transB): one copy of the
  // embedding serves both ends when they are tied.
  const last = g.op('Slice', [x, g.constI64([-1]), g.constI64([Number.MAX_SAFE_INTEGER]), g.constI64([1])]);
  const normed = g.op('Reshape', [rmsNorm(c, last, 'output_norm.weight'), g.constI64([-1, a.hiddenSize])]);
  const head = weights.has('output.weight')
    ? g.initializer(
        'output.weight',
        'float32',
        [a.vocabSize, a.hiddenSize],
        weights.matrix('output.weight', a.vocabSize, a.hiddenSize),
      )
    : embedding;
  const logits2d = g.op('Gemm', [normed, head], { transB: 1 });
  g.op('Reshape', [logits2d, g.constI64([0, 1, a.vocabSize])], {}, 'logits');
  const bytes = g.toBytes(`chorus: converted from a GGUF ${a.architecture} model`);
  progress({ done: total, total, what: 'decoder' });
  return bytes;
}
