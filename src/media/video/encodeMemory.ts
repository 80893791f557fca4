/**
 * What one vision encoder run costs in memory: the estimate of a batch of sequences, each of N patches, whose working
 * memory grows with N squared (the attention scores, numHeads x N x N floats, a few of them alive at once) plus a
 * linear part (the activations per patch). The generated encoder attends within a clip's temporal groups (Qwen2-VL's
 * rule; stages/encoder/EncoderRunner.ts `clipInGroups`), so a clip runs as a batch of its groups, one sequence of a
 * frame's patches each, and its cost is groups x one group's, not one sequence of all its patches (8-10x more for
 * 30 frames). Only the generated encoder has a size to estimate from; a file encoder (fed a clip whole) has none.
 *
 * The fit: peak RSS rise of one run in a fresh onnxruntime session (1 thread, tiny-omni's vision encoder: 4 heads,
 * hidden 128, intermediate 512), 2026-12-02, load 2: batches of groups x patches 4 x 216 18.1 MiB, 8 x 216 36.1,
 * 15 x 216 68.8 (a 30-frame 252 x 168 clip), 30 x 216 136.9, 15 x 108 24.6, 10 x 432 148.4: linear in the groups,
 * ~3.7 live score matrices and ~9.5 KiB a patch per group. The estimate takes 4 and (2 x intermediate + 12 x hidden)
 * x 4 bytes, so it lies 5-10% over each measure (test/unit/videoEncodeBudget.test.ts).
 */
import type { VisionEncoderSize } from '../../common/modelSpec.ts';
import type { VideoGridConfig } from './videoGrid.ts';

/** Score matrices (numHeads x N x N float32) alive at the peak of one sequence's attention (measured 3.7). */
const LIVE_SCORE_MATRICES = 4;

/** Patches a clip of `numFrames` frames of width x height hands the encoder: temporal groups x patches per frame. */
export function clipPatches(
  clip: { readonly numFrames: number; readonly width: number; readonly height: number },
  grid: Pick<VideoGridConfig, 'patchSize' | 'temporalPatchSize'>,
): number {
  const { patchSize: p, temporalPatchSize: tp } = grid;
  return Math.ceil(clip.numFrames / tp) * Math.floor(clip.height / p) * Math.floor(clip.width / p);
}

/**
 * Estimated peak working memory, bytes, of one run of `sequences` sequences (padded to `patches` patches each: a
 * clip's temporal groups, an image) by a vision encoder of `size`.
 */
export function encodeWorkingBytes(
  sequences: number,
  patches: number,
  size: Pick<VisionEncoderSize, 'numHeads' | 'hiddenSize' | 'intermediateSize'>,
): number {
  const scores = LIVE_SCORE_MATRICES * size.numHeads * patches * patches * 4;
  const activations = patches * (2 * size.intermediateSize + 12 * size.hiddenSize) * 4;
  return Math.ceil(sequences * (scores + activations));
}
