/**
 * Packs several items of one modality into one encoder run: each item right-padded with zeros to the
 * longest, with an attention_mask of 1 (real) / 0 (padding). The encoders mask padded keys exactly (see
 * stages/models/encoderStack.ts), so an item's rows do not depend on what it was batched with.
 */
import * as ort from 'onnxruntime-node';
import { AUDIO_ENCODER_INPUTS, VISION_ENCODER_INPUTS } from '../models/encoderSignature.ts';
import type { AudioFeatures, ImagePatches, VideoPatches } from '../../src/media/types.ts';

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
