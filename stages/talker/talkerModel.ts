/**
 * The generated Talker: an AR decoder over codec frames, conditioned on Thinker rows.
 *   talker.onnx: condition [B, S, C] (C = 2 * thinker hidden: [thinker input embed | accept hidden]),
 *     prev_codes [B, S, Q] int64 (the previous frame's codes, BOS for the first), attention_mask,
 *     position_ids, cache.N.* -> logits [B, 1, K + 2] (codebook 0 at the last position; K = BOS, K + 1 = EOS),
 *     last_hidden_state [B, 1, D] (the last position's), cache_new.N.* (the append-only KV signature,
 *     decoderStack.ts). Runners take the last row, so files that give every position ([B, S, ...]) work too.
 *   code_predictor.onnx: hidden [B, D], code0 [B] int64 -> logits [B, Q - 1, K] (codebooks 1..Q-1),
 *     greedy_codes [B, Q - 1] int64 (their argmax)
 *   pad_row.f32: the conditioning row used once the Thinker's text has run out.
 * End of speech is tied to that pad row: the EOS logit gets eosGain * <row, pad> / |pad|^2, which is
 * ~eosGain for the pad row and ~0 for Thinker rows (random, nearly orthogonal in C dimensions). So a
 * random Talker speaks while there is text and stops shortly after it runs out, instead of never or at random.
 */
import type { TalkerSize } from '../../src/common/modelSpec.ts';
import { buildDecoderStack, declareCacheInputs, lastPosition, type CacheLayout } from '../generator/decoderStack.ts';
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import type { ModelGenerator } from '../models/modelCache.ts';
import { Weights, randomUniform, yieldToLoop } from '../generator/weights.ts';

/** Codebook-0 specials, after the K codes. */
export function talkerSpecialIds(codebookSize: number): { bos: number; eos: number; vocab: number } {
  return { bos: codebookSize, eos: codebookSize + 1, vocab: codebookSize + 2 };
}

const EOS_BIAS_SIGMAS = -6; // base EOS logit, in units of logitScale: a Thinker row almost never ends speech
const EOS_GAIN_SIGMAS = 12; // added at the pad row: EOS then wins by ~3 sigma
const PREDICTOR_RANK = 32; // per-codebook width of the residual predictor's low-rank heads

/** layout: the KV-cache I/O (decoderStack.ts); 'optimum' builds the same weights with Hugging Face's signature. */
export const buildTalker: ModelGenerator<TalkerSize, CacheLayout> = async (size, seed, progress, layout = 'append') => {
  const { hiddenSize: d, numCodebooks: q, codebookSize: k, conditionDim: c, logitScale } = size;
  const { bos, vocab } = talkerSpecialIds(k);
  const total = size.numLayers + 2;
  const padRow = randomUniform(seed, 'pad_row', c, 1);

  const g = new GraphBuilder('talker');
  const w = new Weights(g, seed);
  g.input('condition', 'float32', ['batch_size', 'sequence_length', c]);
  g.input('prev_codes', 'int64', ['batch_size', 'sequence_length', q]);
  declareCacheInputs(g, size, layout);
  g.output('logits', 'float32', ['batch_size', 1, vocab]);
  g.output('last_hidden_state', 'float32', ['batch_size', 1, d]);

  // Sum of per-codebook embeddings of the previous frame: one table, codebook q at rows [q * vocab, (q+1) * vocab).
  const offsets = g.constI64(Array.from({ length: q }, (_, i) => i * vocab));
  const codeTable = w.uniform('code_embed.weight', [q * vocab, d], 1 / Math.sqrt(q));
  const codeRows = g.op('Gather', [codeTable, g.op('Add', ['prev_codes', offsets])], { axis: 0 });
  const codeEmbed = g.op('ReduceSum', [codeRows, g.constI64([2])], { keepdims: 0 });
  const condProj = g.op('MatMul', ['condition', w.uniform('condition_proj.weight', [c, d], 1 / Math.sqrt(c))]);
  const embedded = g.op('Add', [condProj, codeEmbed]);

  const stack = await buildDecoderStack(
    g,
    w,
    embedded,
    size,
    async (l) => {
      progress({ done: 1 + l, total, what: `layer ${l}` });
      await yieldToLoop();
    },
    layout,
  );
  const last = g.op('Identity', [lastPosition(g, stack.normed)], {}, 'last_hidden_state');

  const bias = new Float32Array(vocab);
  bias[bos] = -30 * logitScale; // never predicted (the runner masks it too)
  bias[vocab - 1] = EOS_BIAS_SIGMAS * logitScale;
  const head = g.op('MatMul', [last, w.uniform('codec_head.weight', [d, vocab], logitScale / Math.sqrt(d))]);
  let padNormSq = 0;
  for (const v of padRow) padNormSq += v * v;
  const gate = padRow.map((v) => (v * EOS_GAIN_SIGMAS * logitScale) / padNormSq);
  const eosGate = g.op('MatMul', [lastPosition(g, 'condition'), w.data('eos_gate.weight', [c, 1], gate)]);
  // Pad the [B, 1, 1] gate on the left of the last axis so it lands on the EOS column only.
  const eosColumn = g.op('Pad', [eosGate, g.constI64([0, 0, vocab - 1, 0, 0, 0])]);
  g.op('Add', [g.op('Add', [head, eosColumn]), w.data('codec_head.bias', [vocab], bias)], {}, 'logits');
  const talkerBytes = g.toBytes('chorus tiny-omni talker');
  progress({ done: total - 1, total, what: 'talker' });
  await yieldToLoop();

  const predictorBytes = buildCodePredictor(size, seed);
  progress({ done: total, total, what: 'code_predictor' });
  return {
    files: {
      'talker.onnx': talkerBytes,
      'code_predictor.onnx': predictorBytes,
      'pad_row.f32': new Uint8Array(padRow.buffer),
    },
  };
};

/**
 * Residual codebooks 1..Q-1 in one non-autoregressive shot: h = hidden + embed(code0), a shared SiLU layer,
 * then a low-rank head per codebook (a batched MatMul [B, Q-1, 1, r] x [Q-1, r, K]).
 */
function buildCodePredictor(size: TalkerSize, seed: number): Uint8Array {
  const { hiddenSize: d, numCodebooks: q, codebookSize: k, logitScale } = size;
  const { vocab } = talkerSpecialIds(k);
  const g = new GraphBuilder('code_predictor');
  const w = new Weights(g, seed);
  g.input('hidden', 'float32', ['batch_size', d]);
  g.input('code0', 'int64', ['batch_size']);
  g.output('logits', 'float32', ['batch_size', q - 1, k]);
  g.output('greedy_codes', 'int64', ['batch_size', q - 1]);
  const code0 = g.op('Gather', [w.uniform('predictor.code0_embed.weight', [vocab, d], 1), 'code0'], { axis: 0 });
  const h = g.op(
    'LayerNormalization',
    [g.op('Add', ['hidden', code0]), w.fill('predictor.ln.weight', [d], 1), w.fill('predictor.ln.bias', [d], 0)],
    {
      axis: -1,
      epsilon: { f: 1e-5 },
    },
  );
  const width = (q - 1) * PREDICTOR_RANK;
  const up = g.op('MatMul', [h, w.uniform('predictor.up.weight', [d, width], 1 / Math.sqrt(d))]);
  const act = g.op('Mul', [up, g.op('Sigmoid', [up])]);
  const perBook = g.op('Reshape', [act, g.constI64([0, q - 1, 1, PREDICTOR_RANK])]);
  // SiLU output has std ~0.6: scale the heads so logits keep std ~logitScale.
  const heads = w.uniform(
    'predictor.heads.weight',
    [q - 1, PREDICTOR_RANK, k],
    logitScale / (0.6 * Math.sqrt(PREDICTOR_RANK)),
  );
  const logits = g.op('Reshape', [g.op('MatMul', [perBook, heads]), g.constI64([0, q - 1, k])], {}, 'logits');
  // The argmax of every codebook (the first of equal maxima, as greedy sampling picks): a greedy step fetches these
  // [B, Q-1] ids instead of the [B, Q-1, K] logits.
  g.op('ArgMax', [logits], { axis: -1, keepdims: 0, select_last_index: 0 }, 'greedy_codes');
  return g.toBytes('chorus tiny-omni talker code predictor');
}
