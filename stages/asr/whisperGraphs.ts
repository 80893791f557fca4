/**
 * Whisper from a CTranslate2 model.bin -> two ONNX graphs, computed as OpenAI's whisper/model.py computes them:
 *
 *   encoder: input_features [B, mels, F] -> cross.N.key|value [B, heads, F/2, headDim] for every decoder layer
 *     (Conv1d k3 + GELU, Conv1d k3 stride 2 + GELU, sinusoidal positions, pre-LayerNorm blocks of self-attention and
 *     a GELU MLP, a final LayerNorm; then each decoder layer's cross-attention keys and values, computed once per
 *     clip instead of once per token).
 *   decoder: input_ids [B, S] + the cross keys/values -> logits [B, 1, V] of the last position (token embedding +
 *     learned positions, pre-LayerNorm blocks of causal self-attention, cross-attention and MLP, the head tied to the
 *     embedding). The whole prefix is recomputed each step: a transcript is tens of tokens, and the step's cost is
 *     the vocabulary head, not the prefix.
 *
 * GELU is the exact (erf) form, as torch's nn.GELU. CTranslate2 stores each Linear as [out, in] with q|k|v fused in
 * self-attention (k's bias zero) and k|v fused in cross-attention; MatMul wants [in, out], so weights are transposed.
 */
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import type { Ct2File } from './Ct2File.ts';

export interface WhisperDims {
  readonly numMels: number;
  readonly dModel: number;
  readonly numHeads: number;
  readonly encoderLayers: number;
  readonly decoderLayers: number;
  readonly vocabSize: number;
  /** Encoder positions (1500: 30 s of audio at 50 positions/s) and decoder positions (448). */
  readonly audioPositions: number;
  readonly textPositions: number;
}

const LN_EPSILON = 1e-5;
const MASKED_SCORE = -1e9;

export function whisperDims(f: Ct2File): WhisperDims {
  const count = (prefix: string) => {
    let n = 0;
    while (f.has(`${prefix}/layer_${n}/ffn/linear_0/weight`)) n++;
    return n;
  };
  const [dModel, numMels] = f.dims('encoder/conv1/weight');
  return {
    numMels,
    dModel,
    numHeads: f.integer('encoder/num_heads'),
    encoderLayers: count('encoder'),
    decoderLayers: count('decoder'),
    vocabSize: f.dims('decoder/embeddings/weight')[0],
    audioPositions: f.dims('encoder/position_encodings/encodings')[0],
    textPositions: f.dims('decoder/position_encodings/encodings')[0],
  };
}

interface Ctx {
  readonly g: GraphBuilder;
  readonly f: Ct2File;
  readonly d: WhisperDims;
}

/** [out, in] -> [in, out]. */
function transposed(m: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = m[r * cols + c];
  return out;
}

function linear(c: Ctx, x: string, name: string): string {
  const [out, inp] = c.f.dims(`${name}/weight`);
  const w = c.g.initializer(
    `${name}/weight`,
    'float32',
    [inp, out],
    transposed(c.f.floats(`${name}/weight`, [out, inp]), out, inp),
  );
  const b = c.g.initializer(`${name}/bias`, 'float32', [out], c.f.floats(`${name}/bias`, [out]));
  return c.g.op('Add', [c.g.op('MatMul', [x, w]), b]);
}

function layerNorm(c: Ctx, x: string, name: string): string {
  const n = c.d.dModel;
  const gamma = c.g.initializer(`${name}/gamma`, 'float32', [n], c.f.floats(`${name}/gamma`, [n]));
  const beta = c.g.initializer(`${name}/beta`, 'float32', [n], c.f.floats(`${name}/beta`, [n]));
  return c.g.op('LayerNormalization', [x, gamma, beta], { axis: -1, epsilon: { f: LN_EPSILON } });
}

function gelu(g: GraphBuilder, x: string): string {
  const erf = g.op('Erf', [g.op('Mul', [x, g.constF32([Math.SQRT1_2])])]);
  return g.op('Mul', [g.op('Mul', [x, g.constF32([0.5])]), g.op('Add', [erf, g.constF32([1])])]);
}

/** [B, T, D] -> [B, heads, T, headDim]. */
function heads(c: Ctx, x: string): string {
  const hd = c.d.dModel / c.d.numHeads;
  return c.g.op('Transpose', [c.g.op('Reshape', [x, c.g.constI64([0, 0, c.d.numHeads, hd])])], { perm: [0, 2, 1, 3] });
}

/** softmax(q k^T / sqrt(hd) [masked]) v, heads merged back to [B, S, D]. */
function attend(c: Ctx, q: string, k: string, v: string, allowed: string | null): string {
  const { g } = c;
  const hd = c.d.dModel / c.d.numHeads;
  let scores = g.op('Mul', [
    g.op('MatMul', [q, g.op('Transpose', [k], { perm: [0, 1, 3, 2] })]),
    g.constF32([1 / Math.sqrt(hd)]),
  ]);
  if (allowed) scores = g.op('Where', [allowed, scores, g.constF32([MASKED_SCORE])]);
  const context = g.op('MatMul', [g.op('Softmax', [scores], { axis: -1 }), v]);
  return g.op('Reshape', [g.op('Transpose', [context], { perm: [0, 2, 1, 3] }), g.constI64([0, 0, c.d.dModel])]);
}

function selfAttention(c: Ctx, x: string, p: string, allowed: string | null): string {
  const D = c.d.dModel;
  const [q, k, v] = c.g.node('Split', [linear(c, x, `${p}/linear_0`), c.g.constI64([D, D, D])], { axis: -1 }, 3);
  return linear(c, attend(c, heads(c, q), heads(c, k), heads(c, v), allowed), `${p}/linear_1`);
}

function mlp(c: Ctx, x: string, p: string): string {
  return linear(c, gelu(c.g, linear(c, x, `${p}/linear_0`)), `${p}/linear_1`);
}

function conv(c: Ctx, x: string, name: string, stride: number): string {
  const dims = c.f.dims(`${name}/weight`);
  const w = c.g.initializer(`${name}/weight`, 'float32', dims, c.f.floats(`${name}/weight`, dims));
  const b = c.g.initializer(`${name}/bias`, 'float32', [dims[0]], c.f.floats(`${name}/bias`, [dims[0]]));
  return gelu(c.g, c.g.op('Conv', [x, w, b], { kernel_shape: [3], pads: [1, 1], strides: [stride] }));
}

/** The first `length` rows of a [positions, D] table, added to x [B, length, D]. */
function addPositions(c: Ctx, x: string, name: string, positions: number, length: string): string {
  const table = c.g.initializer(name, 'float32', [positions, c.d.dModel], c.f.floats(name, [positions, c.d.dModel]));
  return c.g.op('Add', [x, c.g.op('Slice', [table, c.g.constI64([0]), length, c.g.constI64([0])])]);
}

/** The length (as a 1-element int64) of axis `axis` of x. */
function lengthOf(g: GraphBuilder, x: string, axis: number): string {
  return g.op('Slice', [g.op('Shape', [x]), g.constI64([axis]), g.constI64([axis + 1]), g.constI64([0])]);
}

export function buildWhisperEncoder(f: Ct2File): Uint8Array {
  const d = whisperDims(f);
  const c: Ctx = { g: new GraphBuilder('whisper-encoder'), f, d };
  const { g } = c;
  const hd = d.dModel / d.numHeads;
  g.input('input_features', 'float32', ['batch_size', d.numMels, 'num_frames']);
  const convolved = conv(c, conv(c, 'input_features', 'encoder/conv1', 1), 'encoder/conv2', 2); // [B, D, T]
  let x = g.op('Transpose', [convolved], { perm: [0, 2, 1] });
  x = addPositions(c, x, 'encoder/position_encodings/encodings', d.audioPositions, lengthOf(g, x, 1));
  for (let l = 0; l < d.encoderLayers; l++) {
    const p = `encoder/layer_${l}`;
    x = g.op('Add', [
      x,
      selfAttention(c, layerNorm(c, x, `${p}/self_attention/layer_norm`), `${p}/self_attention`, null),
    ]);
    x = g.op('Add', [x, mlp(c, layerNorm(c, x, `${p}/ffn/layer_norm`), `${p}/ffn`)]);
  }
  const encoded = layerNorm(c, x, 'encoder/layer_norm');
  for (let l = 0; l < d.decoderLayers; l++) {
    const kv = linear(c, encoded, `decoder/layer_${l}/attention/linear_1`);
    const [k, v] = g.node('Split', [kv, g.constI64([d.dModel, d.dModel])], { axis: -1 }, 2);
    g.op('Identity', [heads(c, k)], {}, `cross.${l}.key`);
    g.op('Identity', [heads(c, v)], {}, `cross.${l}.value`);
    for (const which of ['key', 'value'])
      g.output(`cross.${l}.${which}`, 'float32', ['batch_size', d.numHeads, 'audio_positions', hd]);
  }
  return g.toBytes('chorus: Whisper encoder converted from a CTranslate2 model');
}

/** allowed [S, S]: key j at or before query i. */
function causal(g: GraphBuilder, length: string): string {
  const n = g.op('Squeeze', [length, g.constI64([0])]);
  const idx = g.op('Range', [g.constI64([0], []), n, g.constI64([1], [])]);
  return g.op('LessOrEqual', [g.op('Unsqueeze', [idx, g.constI64([0])]), g.op('Unsqueeze', [idx, g.constI64([1])])]);
}

export function buildWhisperDecoder(f: Ct2File): Uint8Array {
  const d = whisperDims(f);
  const c: Ctx = { g: new GraphBuilder('whisper-decoder'), f, d };
  const { g } = c;
  const hd = d.dModel / d.numHeads;
  g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  for (let l = 0; l < d.decoderLayers; l++)
    for (const which of ['key', 'value'])
      g.input(`cross.${l}.${which}`, 'float32', ['batch_size', d.numHeads, 'audio_positions', hd]);
  const table = f.floats('decoder/embeddings/weight', [d.vocabSize, d.dModel]);
  const embedding = g.initializer('decoder/embeddings/weight', 'float32', [d.vocabSize, d.dModel], table);
  const length = lengthOf(g, 'input_ids', 1);
  let x = g.op('Gather', [embedding, 'input_ids'], { axis: 0 });
  x = addPositions(c, x, 'decoder/position_encodings/encodings', d.textPositions, length);
  const allowed = causal(g, length);
  for (let l = 0; l < d.decoderLayers; l++) {
    const p = `decoder/layer_${l}`;
    x = g.op('Add', [
      x,
      selfAttention(c, layerNorm(c, x, `${p}/self_attention/layer_norm`), `${p}/self_attention`, allowed),
    ]);
    const q = heads(c, linear(c, layerNorm(c, x, `${p}/attention/layer_norm`), `${p}/attention/linear_0`));
    const cross = attend(c, q, `cross.${l}.key`, `cross.${l}.value`, null);
    x = g.op('Add', [x, linear(c, cross, `${p}/attention/linear_2`)]);
    x = g.op('Add', [x, mlp(c, layerNorm(c, x, `${p}/ffn/layer_norm`), `${p}/ffn`)]);
  }
  const last = g.op('Slice', [x, g.constI64([-1]), g.constI64([Number.MAX_SAFE_INTEGER]), g.constI64([1])]);
  const normed = g.op('Reshape', [layerNorm(c, last, 'decoder/layer_norm'), g.constI64([-1, d.dModel])]);
  const logits = g.op('Gemm', [normed, embedding], { transB: 1 });
  g.op('Reshape', [logits, g.constI64([0, 1, d.vocabSize])], {}, 'logits');
  g.output('logits', 'float32', ['batch_size', 1, d.vocabSize]);
  return g.toBytes('chorus: Whisper decoder converted from a CTranslate2 model');
}
