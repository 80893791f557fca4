/**
 * The generated Thinker: a decoder with the Optimum multimodal layout — a separate embed_tokens.onnx
 * (input_ids -> inputs_embeds) and a decoder that takes inputs_embeds, so media embeddings splice in
 * as rows. Outputs logits [B, 1, V] (the last position's: all a step samples from; Optimum exports give [B, S, V] and
 * runners take the last row of either), cache_new.N.key|value (decoderStack.ts), and hidden_states.accept [B, S, D].
 */
import type { ThinkerSize } from '../../src/common/modelSpec.ts';
import { buildDecoderStack, declareCacheInputs, lastPosition, type CacheLayout } from '../generator/decoderStack.ts';
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import type { ModelGenerator } from '../models/modelCache.ts';
import { thinkerLogitBias } from './thinkerVocab.ts';
import { Weights, randomUniform, yieldToLoop } from '../generator/weights.ts';

const REPEAT_PENALTY_SIGMAS = 3;

/** [rows, cols] -> [cols, rows] * scale. */
function transposeScaled(m: Float32Array, rows: number, cols: number, scale: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = m[r * cols + c] * scale;
  return out;
}

export const THINKER_ACCEPT_OUTPUT = 'hidden_states.accept';

/** layout: the KV-cache I/O (decoderStack.ts); 'optimum' builds the same weights with Hugging Face's signature. */
export const buildThinker: ModelGenerator<ThinkerSize, CacheLayout> = async (
  size,
  seed,
  progress,
  layout = 'append',
) => {
  if (size.acceptLayer < 0 || size.acceptLayer >= size.numLayers) {
    throw new Error(`acceptLayer ${size.acceptLayer} must be in [0, ${size.numLayers})`);
  }
  const total = size.numLayers + 2;
  const d = size.hiddenSize;

  const table = randomUniform(seed, 'embed_tokens.weight', size.vocabSize * d, 1);
  const eg = new GraphBuilder('embed_tokens');
  eg.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  eg.output('inputs_embeds', 'float32', ['batch_size', 'sequence_length', d]);
  eg.op(
    'Gather',
    [eg.initializer('embed_tokens.weight', 'float32', [size.vocabSize, d], table), 'input_ids'],
    { axis: 0 },
    'inputs_embeds',
  );
  const embedBytes = eg.toBytes('chorus tiny-omni thinker embed_tokens');
  progress({ done: 1, total, what: 'embed_tokens' });
  await yieldToLoop();

  const g = new GraphBuilder('thinker');
  const w = new Weights(g, seed);
  g.input('inputs_embeds', 'float32', ['batch_size', 'sequence_length', d]);
  declareCacheInputs(g, size, layout);
  g.output('logits', 'float32', ['batch_size', 1, size.vocabSize]);
  const stack = await buildDecoderStack(
    g,
    w,
    'inputs_embeds',
    size,
    async (l) => {
      progress({ done: 2 + l, total, what: `layer ${l}` });
      await yieldToLoop();
    },
    layout,
  );
  g.output(THINKER_ACCEPT_OUTPUT, 'float32', ['batch_size', 'sequence_length', d]);
  g.op('Identity', [stack.layerOutputs[size.acceptLayer]], {}, THINKER_ACCEPT_OUTPUT);

  // logitScale is baked into the head weights: the normed state is ~unit variance, so logits have std
  // ~logitScale and the top two of a greedy choice are far apart compared with float noise (~1e-5).
  const head = w.uniform('lm_head.weight', [d, size.vocabSize], size.logitScale / Math.sqrt(d));
  const bias = w.data('lm_head.bias', [size.vocabSize], thinkerLogitBias(size.vocabSize, size.logitScale));
  // A random decoder's greedy text falls into repeating one token; subtracting the input embedding's
  // similarity to every token embedding (~hiddenSize for the same token, ~sqrt(hiddenSize) for others)
  // pushes the token just read down by REPEAT_PENALTY_SIGMAS and everything else by noise only.
  const repeatScale = (REPEAT_PENALTY_SIGMAS * size.logitScale) / d;
  const similarity = w.data(
    'repeat_penalty.weight',
    [d, size.vocabSize],
    transposeScaled(table, size.vocabSize, d, -repeatScale),
  );
  const logits = g.op('Add', [
    g.op('MatMul', [lastPosition(g, stack.normed), head]),
    g.op('MatMul', [lastPosition(g, 'inputs_embeds'), similarity]),
  ]);
  g.op('Add', [logits, bias], {}, 'logits');
  const decoderBytes = g.toBytes('chorus tiny-omni thinker decoder');
  progress({ done: total, total, what: 'decoder' });
  return { files: { 'embed_tokens.onnx': embedBytes, 'decoder_model.onnx': decoderBytes } };
};
