/**
 * Sampled frames -> the vision encoder's input, as Qwen2.5-VL cuts a clip: each patch covers temporalPatchSize (2)
 * consecutive frames x patchSize x patchSize pixels, CLIP-normalised like image patches; patches are ordered by
 * temporal group, then merge group by merge group (each run of mergeSize^2 patches one square of the grid), so the
 * encoder's merge stays a plain reshape. An odd last group repeats its last frame (Qwen pads the same way).
 *
 * The image encoder serves video (docs/video.md): its patch embedding is a Conv3d over the temporal patch whose weights
 * are the same for both frames (each half the image kernel), which is the image embedding of the frames' mean. So a
 * temporal patch is handed over as that mean: patch vectors are 3 x patchSize^2 wide, as an image's, and an image is
 * exactly a clip of two identical frames (Qwen2.5-VL's own rule for images).
 */
import type { VideoPatches } from '../types.ts';
import { CLIP_SCALE, CLIP_SHIFT, walkMergeGroups } from '../imagePatches.ts';
import { mediaInvalid } from '../mediaError.ts';
import { videoGrid, type VideoGridConfig } from './videoGrid.ts';

export interface VideoFramesIn {
  readonly data: Uint8Array;
  readonly numFrames: number;
  readonly width: number;
  readonly height: number;
}

export function videoPatches(video: VideoFramesIn, config: VideoGridConfig, what = 'video'): VideoPatches {
  const { patchSize: p, mergeSize: m, temporalPatchSize: tp } = config;
  const { width, height, numFrames } = video;
  const frameBytes = width * height * 3;
  if (video.data.byteLength !== numFrames * frameBytes)
    throw mediaInvalid(what, `${video.data.byteLength} bytes are not ${numFrames} RGB frames of ${width}x${height}`);
  if (width % (p * m) !== 0 || height % (p * m) !== 0)
    throw mediaInvalid(what, `frames of ${width}x${height} are not multiples of ${p * m} px`);
  const grid = videoGrid(numFrames, width, height, config);
  const gridW = width / p;
  const gridH = height / p;
  const patchDim = 3 * p * p;
  const numPatches = grid.t * gridW * gridH;
  const patches = new Float32Array(numPatches * patchDim);
  const positions = new Int32Array(numPatches * 2);
  let index = 0;
  for (let g = 0; g < grid.t; g++) {
    index = walkMergeGroups(gridW, gridH, m, positions, index, (index, row, col) => {
      const base = index * patchDim;
      for (let c = 0; c < 3; c++) {
        for (let y = 0; y < p; y++) {
          const dst = base + (c * p + y) * p;
          for (let t = 0; t < tp; t++) {
            const frame = Math.min(g * tp + t, numFrames - 1);
            const src = frame * frameBytes + ((row * p + y) * width + col * p) * 3 + c;
            for (let x = 0; x < p; x++) patches[dst + x] += video.data[src + 3 * x];
          }
          for (let x = 0; x < p; x++) patches[dst + x] = (patches[dst + x] / tp) * CLIP_SCALE[c] - CLIP_SHIFT[c];
        }
      }
    });
  }
  return {
    modality: 'video',
    patches,
    positions,
    patchSize: p,
    mergeSize: m,
    temporalPatchSize: tp,
    gridT: grid.t,
    gridHeight: gridH,
    gridWidth: gridW,
    numPatches,
    numEmbeddings: numPatches / (m * m),
  };
}
