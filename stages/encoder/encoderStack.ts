/**
 * The bidirectional transformer body of the generated encoders (audio and vision). Unlike the decoder
 * stack there is no KV cache and no causal mask: every position attends to every real position of its
 * own item. Padding is what makes a batch exact: a padded key gets its score replaced (Where, not added)
 * by -1e9, so its softmax weight is exactly 0 and a real row computes the same values alone or in a
 * batch of longer items. Padded query rows compute garbage the runner slices off.
 */
import type { GraphBuilder } from '../generator/GraphBuilder.ts';
import type { Weights } from '../generator/weights.ts';

export interface EncoderDims {
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
}

const MASKED_SCORE = -1e9; // finite: a padded query row whose keys are all real still gives a proper softmax

export function checkEncoderDims(dims: EncoderDims): void {
  const headDim = dims.hiddenSize / dims.numHeads;
  if (!Number.isInteger(headDim) || dims.hiddenSize % 4 !== 0) {
    throw new Error(`hiddenSize ${dims.hiddenSize} must be a multiple of 4 and divisible by numHeads ${dims.numHeads}`);
  }
}

export function layerNorm(g: GraphBuilder, w: Weights, x: string, name: string, size: number): string {
  return g.op('LayerNormalization', [x, w.fill(`${name}.weight`, [size], 1), w.fill(`${name}.bias`, [size], 0)], {
    axis: -1,
    epsilon: { f: 1e-5 },
  });
}

export function silu(g: GraphBuilder, x: string): string {
  return g.op('Mul', [x, g.op('Sigmoid', [x])]); // opset 17 has no Gelu
}

/** x [..., inSize] @ W [inSize, outSize] + b, weights with unit-variance output for unit-variance input. */
export function linear(g: GraphBuilder, w: Weights, x: string, name: string, inSize: number, outSize: number): string {
  const y = g.op('MatMul', [x, w.uniform(`${name}.weight`, [inSize, outSize], 1 / Math.sqrt(inSize))]);
  return g.op('Add', [y, w.fill(`${name}.bias`, [outSize], 0)]);
}

/**
 * Sinusoidal code [..., width] for float positions [...]: sin and cos of position * 10000^(-i / (width/2)).
 * Computed in the graph from the positions, so there is no table and no length limit.
 */
export function sinusoidCode(g: GraphBuilder, positions: string, width: number): string {
  const half = width / 2;
  const invFreq = Array.from({ length: half }, (_, i) => Math.pow(10000, -i / half));
  const angles = g.op('Mul', [g.op('Unsqueeze', [positions, g.constI64([-1])]), g.constF32(invFreq)]);
  return g.op('Concat', [g.op('Sin', [angles]), g.op('Cos', [angles])], { axis: -1 });
}

/** allowed [B, 1, 1, S] (bool) from a [B, S] mask of 1 (real) / 0 (padding), int64 or float. */
export function keyAllowed(g: GraphBuilder, mask: string): string {
  return g.op('Unsqueeze', [g.op('Cast', [mask], { to: 9 /* BOOL */ }), g.constI64([1, 2])]);
}

function splitHeads(g: GraphBuilder, x: string, numHeads: number, headDim: number): string {
  return g.op('Transpose', [g.op('Reshape', [x, g.constI64([0, 0, numHeads, headDim])])], { perm: [0, 2, 1, 3] });
}

/** Pre-LN transformer layers over x [B, S, D] (position code already added); returns the final-normed [B, S, D]. */
export async function buildEncoderStack(
  g: GraphBuilder,
  w: Weights,
  x: string,
  allowed: string,
  dims: EncoderDims,
  onLayer: (layer: number) => Promise<void>,
): Promise<string> {
  checkEncoderDims(dims);
  const { hiddenSize: d, numHeads, intermediateSize } = dims;
  const headDim = d / numHeads;
  const qScale = g.constF32([1 / Math.sqrt(headDim)]);
  const masked = g.constF32([MASKED_SCORE]);
  const std = 1 / Math.sqrt(d);
  for (let l = 0; l < dims.numLayers; l++) {
    const p = `layers.${l}`;
    const h = layerNorm(g, w, x, `${p}.ln_1`, d);
    const qkv = g.op('MatMul', [h, w.uniform(`${p}.attn.qkv.weight`, [d, 3 * d], std)]);
    const [q, k, v] = g.node('Split', [qkv, g.constI64([d, d, d])], { axis: -1 }, 3);
    const qh = g.op('Mul', [splitHeads(g, q, numHeads, headDim), qScale]);
    const kt = g.op('Transpose', [g.op('Reshape', [k, g.constI64([0, 0, numHeads, headDim])])], { perm: [0, 2, 3, 1] });
    const scores = g.op('MatMul', [qh, kt]); // [B, H, S, S]
    const probs = g.op('Softmax', [g.op('Where', [allowed, scores, masked])], { axis: -1 });
    const context = g.op('Transpose', [g.op('MatMul', [probs, splitHeads(g, v, numHeads, headDim)])], {
      perm: [0, 2, 1, 3],
    });
    const merged = g.op('Reshape', [context, g.constI64([0, 0, d])]);
    x = g.op('Add', [x, g.op('MatMul', [merged, w.uniform(`${p}.attn.out.weight`, [d, d], std)])]);

    const h2 = layerNorm(g, w, x, `${p}.ln_2`, d);
    const up = g.op('MatMul', [h2, w.uniform(`${p}.mlp.up.weight`, [d, intermediateSize], std)]);
    const down = w.uniform(`${p}.mlp.down.weight`, [intermediateSize, d], 1 / Math.sqrt(intermediateSize));
    x = g.op('Add', [x, g.op('MatMul', [silu(g, up), down])]);
    await onLayer(l);
  }
  return layerNorm(g, w, x, 'ln_post', d);
}
