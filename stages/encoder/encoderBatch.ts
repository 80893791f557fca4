/**
 * Packs several items of one modality into one encoder run: each item right-padded with zeros to the
 * longest, with an attention_mask of 1 (real) / 0 (padding). The encoders mask padded keys exactly (see
 * stages/models/encoderStack.ts), so an item's rows do not depend on what it was batched with.
 */
import * as ort from 'onnxruntime-node';
import { AUDIO_ENCODER_INPUTS, VISION_ENCODER_INPUTS } from '../models/encoderSignature.ts';
import type { AudioFeatures, ImagePatches, VideoPatches } from '../../src/media/types.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';

export function packAudio(items: readonly AudioFeatures[], numMelBins: number): Record<string, ort.Tensor> {
  const maxFrames = Math.max(...items.map((i) => i.numFrames));
  const features = new Float32Array(items.length * numMelBins * maxFrames);
  const mask = new BigInt64Array(items.length * maxFrames);
  items.forEach((item, b) => {
    for (let m = 0; m < numMelBins; m++) {
      features.set(item.mel.subarray(m * item.numFrames, (m + 1) * item.numFrames), (b * numMelBins + m) * maxFrames);
    }
    mask.fill(1n, b * maxFrames, b * maxFrames + item.numFrames);
  });
  return {
    [AUDIO_ENCODER_INPUTS.features]: new ort.Tensor('float32', features, [items.length, numMelBins, maxFrames]),
    [AUDIO_ENCODER_INPUTS.mask]: new ort.Tensor('int64', mask, [items.length, maxFrames]),
  };
}

/** Images, and video clips (image-shaped patches over their temporal groups: videoPatches.ts). */
export function packImages(
  items: readonly (ImagePatches | VideoPatches)[],
  patchDim: number,
): Record<string, ort.Tensor> {
  const maxPatches = Math.max(...items.map((i) => i.numPatches));
  const patches = new Float32Array(items.length * maxPatches * patchDim);
  const positions = new BigInt64Array(items.length * maxPatches * 2);
  const mask = new BigInt64Array(items.length * maxPatches);
  items.forEach((item, b) => {
    patches.set(item.patches, b * maxPatches * patchDim);
    for (let i = 0; i < item.numPatches * 2; i++) positions[b * maxPatches * 2 + i] = BigInt(item.positions[i]);
    mask.fill(1n, b * maxPatches, b * maxPatches + item.numPatches);
  });
  return {
    [VISION_ENCODER_INPUTS.patches]: new ort.Tensor('float32', patches, [items.length, maxPatches, patchDim]),
    [VISION_ENCODER_INPUTS.positions]: new ort.Tensor('int64', positions, [items.length, maxPatches, 2]),
    [VISION_ENCODER_INPUTS.mask]: new ort.Tensor('int64', mask, [items.length, maxPatches]),
  };
}

/**
 * Temporal groups [from, to) of a clip, as a clip of their own (a subarray: nothing copied), their rows the clip's
 * rows of that time when the encoder attends within each group.
 */
export function clipGroups(clip: VideoPatches, from: number, to: number): VideoPatches {
  const perGroup = clip.gridHeight * clip.gridWidth;
  const width = clip.patches.length / clip.numPatches;
  return {
    ...clip,
    patches: clip.patches.subarray(from * perGroup * width, to * perGroup * width),
    positions: clip.positions.subarray(from * perGroup * 2, to * perGroup * 2),
    numPatches: (to - from) * perGroup,
    numEmbeddings: (clip.numEmbeddings / clip.gridT) * (to - from),
    gridT: to - from,
  };
}

/**
 * A clip as its temporal groups, each a sequence of its own (one patch of each position of the grid): the run
 * attends within a group, as Qwen2-VL's vision tower does (its cu_seqlens cut a clip's patches per temporal patch).
 * Each group keeps the clip's patch order (merge group by merge group), so its rows are the clip's rows of that time.
 */
export function temporalGroups(clip: VideoPatches): VideoPatches[] {
  return Array.from({ length: clip.gridT }, (_, g) => clipGroups(clip, g, g + 1));
}

/**
 * Runs `items` with every clip cut into its temporal groups (temporalGroups), in one run of `run`, and joins each
 * clip's groups' rows back in time order: one row array per item, as `run` gives for whole items.
 */
export function runInGroups<T extends { readonly modality: string }>(
  items: readonly T[],
  split: (item: T) => readonly T[] | null,
  run: (parts: readonly T[]) => Float32Array[],
): Float32Array[] {
  const parts = items.map((item) => split(item) ?? [item]);
  const rows = run(parts.flat());
  let next = 0;
  return parts.map((p) => {
    const mine = rows.slice(next, (next += p.length));
    return mine.length === 1 ? mine[0] : concatFloat32(mine);
  });
}
