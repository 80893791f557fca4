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
