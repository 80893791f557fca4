/**
 * What one clip's encode costs the vision encoder in memory: the estimate of one sequence of N patches, whose working
 * memory grows with N squared (the attention scores, numHeads x N x N floats, a few of them alive at once) plus a
 * linear part (the activations per patch). `encoder.video.max_patches_per_encode` bounds a clip's N; the fallback
 * steps a clip under it (src/engine/fitPrompt.ts).
 *
 * The fit: peak RSS rise of one encode in a fresh onnxruntime session (1 thread, tiny-omni's vision encoder: 4 heads,
 * hidden 128, intermediate 512), 2026-12-02: 800 patches 37.5 MiB, 1,600 139 MiB, 3,240 544 MiB, i.e. 3.2 live
 * score matrices and ~8.5 KiB a patch. The estimate below takes 3.5 and (2 x intermediate + 8 x hidden) x 4 bytes, so
 * it lies 7-8% over each measure. Since the generated encoder attends within a clip's temporal groups (Qwen2-VL's
 * rule; stages/encoder/EncoderRunner.ts) a clip is a batch of short sequences, not one of N: 3,240 patches in 15
 * groups measured 69 MiB, so for a clip this estimate is an upper bound 8-10x over (docs/video.md "Memory"), kept
 * until it is refitted to the groups.
 */
import type { VisionEncoderSize } from '../../common/modelSpec.ts';
import type { VideoGridConfig } from './videoGrid.ts';

/** Score matrices (numHeads x N x N float32) alive at the peak of one encode (measured 3.2, rounded up). */
const LIVE_SCORE_MATRICES = 3.5;

/** Patches a clip of `numFrames` frames of width x height hands the encoder: temporal groups x patches per frame. */
export function clipPatches(
  clip: { readonly numFrames: number; readonly width: number; readonly height: number },
  grid: Pick<VideoGridConfig, 'patchSize' | 'temporalPatchSize'>,
): number {
  const { patchSize: p, temporalPatchSize: tp } = grid;
  return Math.ceil(clip.numFrames / tp) * Math.floor(clip.height / p) * Math.floor(clip.width / p);
}

/** Estimated peak working memory, bytes, of one encode of `patches` patches by a vision encoder of `size`. */
export function encodeWorkingBytes(
  patches: number,
  size: Pick<VisionEncoderSize, 'numHeads' | 'hiddenSize' | 'intermediateSize'>,
): number {
  const scores = LIVE_SCORE_MATRICES * size.numHeads * patches * patches * 4;
  const activations = patches * (2 * size.intermediateSize + 8 * size.hiddenSize) * 4;
  return Math.ceil(scores + activations);
}
