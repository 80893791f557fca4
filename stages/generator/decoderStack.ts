/**
 * The GPT-style decoder body shared by the Thinker and the Talker: attention_mask [B, past+S] (int64,
 * 0 = padding), position_ids [B, S] (int64), and the KV cache in one of two layouts:
 *  - 'append' (what Chorus generates): cache.N.key|value [past, B, H, Dh] -> cache_new.N.key|value [S, B, H, Dh],
 *    only the new positions. Position-major, so the runner keeps each batch's cache in capacity buffers, feeds a
 *    prefix view of them without copying and appends the new positions in place.
 *  - 'optimum' (Hugging Face exports, kept for tests): past_key_values.N.key|value [B, H, past, Dh] ->
 *    present.N.key|value [B, H, past+S, Dh], the whole cache back every step.
 * Both compute the same attention over the same keys and values.
 *
 * Left padding is what makes batches of different lengths exact: a padded key gets mask 0, so its score is
 * replaced (Where, not added) by -1e9 and its softmax weight is exactly 0; the positions come from
 * position_ids, so a sequence sees the same positional code alone or in a batch.
 */
import type { WeightForm } from '../../src/common/modelSpec.ts';
import type { GraphBuilder } from './GraphBuilder.ts';
import { q4MatMul, quantizeQ4 } from './q4.ts';
import { randomUniform, type Weights } from './weights.ts';

export interface DecoderDims {
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** How the layers' projections are held (absent: float32). */
  readonly weights?: WeightForm;
}

export interface DecoderStack {
  /** The residual stream after every layer (index l = output of layer l), before the final norm. */
  readonly layerOutputs: string[];
  /** The final layer-normed hidden state [B, S, D]. */
  readonly normed: string;
}

const MASKED_SCORE = -1e9; // finite: a row with every key masked (a padded query) gives a uniform softmax, not NaN

export type CacheLayout = 'append' | 'optimum';

export function pastKeyName(layer: number, which: 'key' | 'value', layout: CacheLayout = 'optimum'): string {
  return layout === 'append' ? `cache.${layer}.${which}` : `past_key_values.${layer}.${which}`;
}

export function presentName(layer: number, which: 'key' | 'value', layout: CacheLayout = 'optimum'): string {
  return layout === 'append' ? `cache_new.${layer}.${which}` : `present.${layer}.${which}`;
}

/** Declares attention_mask, position_ids and the past inputs (call after the model's first input). */
export function declareCacheInputs(g: GraphBuilder, dims: DecoderDims, layout: CacheLayout = 'optimum'): void {
  const headDim = dims.hiddenSize / dims.numHeads;
  g.input('attention_mask', 'int64', ['batch_size', 'total_sequence_length']);
  g.input('position_ids', 'int64', ['batch_size', 'sequence_length']);
  const shape =
    layout === 'append'
      ? ['past_sequence_length', 'batch_size', dims.numHeads, headDim]
      : ['batch_size', dims.numHeads, 'past_sequence_length', headDim];
  for (let l = 0; l < dims.numLayers; l++) {
    for (const which of ['key', 'value'] as const) g.input(pastKeyName(l, which, layout), 'float32', shape);
  }
}

function layerNorm(g: GraphBuilder, w: Weights, x: string, name: string, size: number): string {
  const gamma = w.fill(`${name}.weight`, [size], 1);
  const beta = w.fill(`${name}.bias`, [size], 0);
  return g.op('LayerNormalization', [x, gamma, beta], { axis: -1, epsilon: { f: 1e-5 } });
}

/** Sinusoidal position code computed from position_ids: no table, so no hard length limit in the graph. */
function positionCode(g: GraphBuilder, hiddenSize: number): string {
  const half = hiddenSize / 2;
  const invFreq = Array.from({ length: half }, (_, i) => Math.pow(10000, -i / half));
  const pos = g.op('Cast', ['position_ids'], { to: 1 /* FLOAT */ });
  const angles = g.op('Mul', [g.op('Unsqueeze', [pos, g.constI64([-1])]), g.constF32(invFreq)]);
  return g.op('Concat', [g.op('Sin', [angles]), g.op('Cos', [angles])], { axis: -1 });
}

/** allowed[b, 0, i, j] = key j is real (mask 1) and not in the future of query i (j <= past + i). */
function attentionAllowed(g: GraphBuilder, x: string): string {
  const scalar1 = g.constI64([1], []);
  const total = g.op('Gather', [g.op('Shape', ['attention_mask']), scalar1], { axis: 0 });
  const newLen = g.op('Gather', [g.op('Shape', [x]), scalar1], { axis: 0 });
  const past = g.op('Sub', [total, newLen]);
  const keyIdx = g.op('Range', [g.constI64([0], []), total, scalar1]);
  const queryIdx = g.op('Range', [past, total, scalar1]);
  const causal = g.op('LessOrEqual', [
    g.op('Unsqueeze', [keyIdx, g.constI64([0])]),
    g.op('Unsqueeze', [queryIdx, g.constI64([1])]),
  ]);
  const real = g.op('Unsqueeze', [g.op('Cast', ['attention_mask'], { to: 9 /* BOOL */ }), g.constI64([1, 2])]);
  return g.op('And', [causal, real]);
}

/**
 * [d, 3d] fused q|k|v weights with the attention scale 1/sqrt(headDim) folded into the q columns (one node less per
 * layer).
 */
function qkvWeight(seed: number, name: string, d: number, std: number, qScale: number): Float32Array {
  const weight = randomUniform(seed, name, d * 3 * d, std);
  for (let row = 0; row < d; row++) for (let col = 0; col < d; col++) weight[row * 3 * d + col] *= qScale;
  return weight;
}

function splitHeads(g: GraphBuilder, x: string, numHeads: number, headDim: number): string {
  return g.op('Transpose', [g.op('Reshape', [x, g.constI64([0, 0, numHeads, headDim])])], { perm: [0, 2, 1, 3] });
}

/**
 * Layer l's keys and values over past + new positions, as [B, H, T, Dh], with the cache output(s) named for the
 * layout: the whole concatenation (optimum), or the new positions only, position-major (append).
 */
function keysAndValues(
  g: GraphBuilder,
  layout: CacheLayout,
  l: number,
  k: string,
  v: string,
  numHeads: number,
  headDim: number,
): { keys: string; values: string } {
  if (layout === 'optimum') {
    const [keys, values] = (['key', 'value'] as const).map((which, i) =>
      g.op(
        'Concat',
        [pastKeyName(l, which), splitHeads(g, i === 0 ? k : v, numHeads, headDim)],
        { axis: 2 },
        presentName(l, which),
      ),
    );
    return { keys, values };
  }
  const [keys, values] = (['key', 'value'] as const).map((which, i) => {
    const heads = g.op('Reshape', [i === 0 ? k : v, g.constI64([0, 0, numHeads, headDim])]); // [B, S, H, Dh]
    const fresh = g.op('Transpose', [heads], { perm: [1, 0, 2, 3] }, presentName(l, which, layout)); // [S, B, H, Dh]
    const all = g.op('Concat', [pastKeyName(l, which, layout), fresh], { axis: 0 }); // [T, B, H, Dh]
    return g.op('Transpose', [all], { perm: [1, 2, 0, 3] }); // [B, H, T, Dh]
  });
  return { keys, values };
}

/**
 * x [B, S, ...] -> [B, 1, ...], its last position. Heads run on it alone: sampling reads only the last position,
 * and a head over every prompt position was ~6-9% of a prefill on the first packet's critical path.
 */
export function lastPosition(g: GraphBuilder, x: string): string {
  return g.op('Slice', [x, g.constI64([-1]), g.constI64([Number.MAX_SAFE_INTEGER]), g.constI64([1])]);
}

/**
 * Builds the stack over x [B, S, D] (already embedded; the position code is added here).
 * onLayer runs after each layer's weights exist, for build progress.
 */
export async function buildDecoderStack(
  g: GraphBuilder,
  w: Weights,
  embedded: string,
  dims: DecoderDims,
  onLayer: (layer: number) => Promise<void>,
  layout: CacheLayout = 'optimum',
): Promise<DecoderStack> {
  const { hiddenSize: d, numHeads, intermediateSize, numLayers } = dims;
  const headDim = d / numHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0 || d % 2 !== 0) {
    throw new Error(`hiddenSize ${d} must be even and divisible by numHeads ${numHeads}`);
  }
  let x = g.op('Add', [embedded, positionCode(g, d)]);
  const allowed = attentionAllowed(g, x);
  const qScale = 1 / Math.sqrt(headDim);
  const masked = g.constF32([MASKED_SCORE]);
  const layerOutputs: string[] = [];
  const std = 1 / Math.sqrt(d);
  // x [B, S, k] times the [k, n] weight `values()`: a float32 MatMul, or 4-bit (q4).
  const linear = (x: string, name: string, k: number, n: number, values: () => Float32Array) =>
    dims.weights === 'q4'
      ? q4MatMul(g, x, name, quantizeQ4(values(), k, n))
      : g.op('MatMul', [x, w.data(name, [k, n], values())]);
  const uniform = (name: string, count: number, s: number) => () => randomUniform(w.seed, name, count, s);

  for (let l = 0; l < numLayers; l++) {
    const p = `layers.${l}`;
    const h = layerNorm(g, w, x, `${p}.ln_1`, d);
    const qkv = linear(h, `${p}.attn.qkv.weight`, d, 3 * d, () =>
      qkvWeight(w.seed, `${p}.attn.qkv.weight`, d, std, qScale),
    );
    const [q, k, v] = g.node('Split', [qkv, g.constI64([d, d, d])], { axis: -1 }, 3);
    const qh = splitHeads(g, q, numHeads, headDim);
    const { keys: presentKey, values: presentValue } = keysAndValues(g, layout, l, k, v, numHeads, headDim);
    const scores = g.op('MatMul', [qh, g.op('Transpose', [presentKey], { perm: [0, 1, 3, 2] })]);
    const probs = g.op('Softmax', [g.op('Where', [allowed, scores, masked])], { axis: -1 });
    const context = g.op('Transpose', [g.op('MatMul', [probs, presentValue])], { perm: [0, 2, 1, 3] });
    const merged = g.op('Reshape', [context, g.constI64([0, 0, d])]);
    x = g.op('Add', [x, linear(merged, `${p}.attn.out.weight`, d, d, uniform(`${p}.attn.out.weight`, d * d, std))]);

    const h2 = layerNorm(g, w, x, `${p}.ln_2`, d);
    const up = linear(
      h2,
      `${p}.mlp.up.weight`,
      d,
      intermediateSize,
      uniform(`${p}.mlp.up.weight`, d * intermediateSize, std),
    );
    const act = g.op('Mul', [up, g.op('Sigmoid', [up])]); // SiLU: opset 17 has no Gelu
    const downStd = 1 / Math.sqrt(intermediateSize);
    const down = uniform(`${p}.mlp.down.weight`, intermediateSize * d, downStd);
    x = g.op('Add', [x, linear(act, `${p}.mlp.down.weight`, intermediateSize, d, down)]);
    layerOutputs.push(x);
    const outShape =
      layout === 'append'
        ? ['sequence_length', 'batch_size', numHeads, headDim]
        : ['batch_size', numHeads, 'total_sequence_length', headDim];
    for (const which of ['key', 'value'] as const) g.output(presentName(l, which, layout), 'float32', outShape);
    await onLayer(l);
  }
  return { layerOutputs, normed: layerNorm(g, w, x, 'ln_f', d) };
}
