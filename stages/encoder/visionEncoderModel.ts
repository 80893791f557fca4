/**
 * The generated vision encoder (tiny-omni family), shaped like Qwen2-VL's: flattened patches
 * pixel_patches [B, N, 3 * P * P], their grid coordinates patch_position_ids [B, N, 2] (row, col) and
 * attention_mask [B, N] -> image_embeds [B, N / mergeSize^2, outputSize].
 *
 * A linear patch embedding plus a 2D sinusoidal code (half the width for the row, half for the column),
 * a bidirectional transformer, then mergeSize^2 neighbouring patches are concatenated and projected into
 * the Thinker's width. The merge is a plain reshape because the preprocessor orders patches group by
 * group (each run of mergeSize^2 patches is one square of the grid); a batch pads whole groups at the end,
 * so no merged row mixes real and padded patches.
 */
import { GraphBuilder } from '../generator/GraphBuilder.ts';
import { buildEncoderStack, keyAllowed, linear, silu, sinusoidCode } from './encoderStack.ts';
import type { VisionEncoderSize } from './encoderSizes.ts';
import { VISION_ENCODER_FILE, VISION_ENCODER_INPUTS, VISION_ENCODER_OUTPUT } from '../models/encoderSignature.ts';
import type { ModelGenerator } from '../models/modelCache.ts';
import { Weights, yieldToLoop } from '../generator/weights.ts';

export const buildVisionEncoder: ModelGenerator<VisionEncoderSize> = async (size, seed, progress) => {
  const { patchSize: p, mergeSize: m, hiddenSize: c, outputSize: d } = size;
  const patchDim = 3 * p * p;
  const group = m * m;
  const total = size.numLayers + 2;
  const g = new GraphBuilder('vision_encoder');
  const w = new Weights(g, seed);
  g.input(VISION_ENCODER_INPUTS.patches, 'float32', ['batch_size', 'num_patches', patchDim]);
  g.input(VISION_ENCODER_INPUTS.positions, 'int64', ['batch_size', 'num_patches', 2]);
  g.input(VISION_ENCODER_INPUTS.mask, 'int64', ['batch_size', 'num_patches']);
  g.output(VISION_ENCODER_OUTPUT, 'float32', ['batch_size', 'num_embeddings', d]);

  const embedded = linear(g, w, VISION_ENCODER_INPUTS.patches, 'patch_embed', patchDim, c);
  const pos = g.op('Cast', [VISION_ENCODER_INPUTS.positions], { to: 1 /* FLOAT */ }); // [B, N, 2]
  const [rows, cols] = g.node('Split', [pos, g.constI64([1, 1])], { axis: -1 }, 2);
  const squeeze = (t: string): string => g.op('Squeeze', [t, g.constI64([-1])]);
  const code = g.op('Concat', [sinusoidCode(g, squeeze(rows), c / 2), sinusoidCode(g, squeeze(cols), c / 2)], {
    axis: -1,
  });
  progress({ done: 1, total, what: 'patch embed' });
  await yieldToLoop();

  const normed = await buildEncoderStack(
    g,
    w,
    g.op('Add', [embedded, code]),
    keyAllowed(g, VISION_ENCODER_INPUTS.mask),
    size,
    async (l) => {
      progress({ done: 2 + l, total, what: `layer ${l}` });
      await yieldToLoop();
    },
  );
  const merged = g.op('Reshape', [normed, g.constI64([0, -1, group * c])]); // [B, N / m^2, m^2 * C]
  const hidden = silu(g, linear(g, w, merged, 'merger.0', group * c, d));
  g.op('Identity', [linear(g, w, hidden, 'merger.1', d, d)], {}, VISION_ENCODER_OUTPUT);
  const bytes = g.toBytes('chorus tiny-omni vision encoder');
  progress({ done: total, total, what: 'vision encoder' });
  return { files: { [VISION_ENCODER_FILE]: bytes } };
};
