/**
 * Foreign ONNX files for the bring-your-own tests, built the way an Optimum text-decoder export looks:
 * input_ids in (the embedding inside the graph), logits + present.* out, no hidden states.
 */
import { buildDecoderStack, declareCacheInputs, type DecoderDims } from '../../stages/generator/decoderStack.ts';
import { GraphBuilder } from '../../stages/generator/GraphBuilder.ts';
import { Weights } from '../../stages/generator/weights.ts';

export interface TextDecoderSize extends DecoderDims {
  readonly vocabSize: number;
}

/** An Optimum-layout decoder with a KV cache ("decoder_with_past" / use_cache=True). */
export async function optimumTextDecoder(size: TextDecoderSize, seed: number): Promise<Uint8Array> {
  const g = new GraphBuilder('optimum_decoder');
  const w = new Weights(g, seed);
  g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  declareCacheInputs(g, size);
  g.output('logits', 'float32', ['batch_size', 'sequence_length', size.vocabSize]);
  const embedded = g.op('Gather', [w.uniform('wte', [size.vocabSize, size.hiddenSize], 1), 'input_ids'], { axis: 0 });
  const stack = await buildDecoderStack(g, w, embedded, size, async () => {});
  g.op(
    'MatMul',
    [stack.normed, w.uniform('lm_head', [size.hiddenSize, size.vocabSize], 16 / Math.sqrt(size.hiddenSize))],
    {},
    'logits',
  );
  return g.toBytes();
}

/** The same decoder exported without its cache (use_cache=False): no past inputs, no present outputs. */
export function optimumDecoderWithoutCache(size: TextDecoderSize, seed: number): Uint8Array {
  const g = new GraphBuilder('optimum_decoder_no_cache');
  const w = new Weights(g, seed);
  g.input('input_ids', 'int64', ['batch_size', 'sequence_length']);
  g.input('attention_mask', 'int64', ['batch_size', 'sequence_length']);
  g.output('logits', 'float32', ['batch_size', 'sequence_length', size.vocabSize]);
  const embedded = g.op('Gather', [w.uniform('wte', [size.vocabSize, size.hiddenSize], 1), 'input_ids'], { axis: 0 });
  g.op('MatMul', [embedded, w.uniform('lm_head', [size.hiddenSize, size.vocabSize], 1)], {}, 'logits');
  return g.toBytes();
}

/**
 * A stateful vocoder whose state does not carry: one sample per frame, a causal 2-tap conv over the frame's code
 * sum with past_state.0 as its left context, but present_state.0 returns the past unchanged instead of the last
 * frame. Its chunks therefore differ from a whole decode; the runner must refuse it.
 */
export function vocoderWithStuckState(numCodebooks: number): Uint8Array {
  const g = new GraphBuilder('stuck_state_vocoder');
  g.input('codes', 'int64', ['batch_size', numCodebooks, 'num_frames']);
  g.input('num_frames', 'int64', ['batch_size']);
  g.input('past_state.0', 'float32', ['batch_size', 1, 1]);
  g.output('audio', 'float32', ['batch_size', 1, 'num_samples']);
  g.output('present_state.0', 'float32', ['batch_size', 1, 1]);
  const sums = g.op('Cast', [g.op('ReduceSum', ['codes', g.constI64([1])], { keepdims: 1 })], { to: 1 }); // [B, 1, T]
  const joined = g.op('Concat', ['past_state.0', sums], { axis: 2 });
  g.op('Conv', [joined, g.constF32([0.25, 0.25], [1, 1, 2])], { kernel_shape: [2] }, 'audio');
  g.op('Identity', ['past_state.0'], {}, 'present_state.0');
  return g.toBytes();
}
