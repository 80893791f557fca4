/**
 * What flows through the encoder building blocks: preprocessed media (the encoder's input, whose embedding
 * count is already known) and the rows the encoders produce.
 */

import type { Modality } from '../common/modality.ts';

export type { Modality };

/** Log-mel features of one audio item (src/media/audio.ts). */
export interface AudioFeatures {
  readonly modality: 'audio';
  /** [numMelBins][numFrames], row-major. */
  readonly mel: Float32Array;
  readonly numMelBins: number;
  readonly numFrames: number;
  /** Rows the audio encoder will produce: audioEmbeddingCount of the 16 kHz samples. */
  readonly numEmbeddings: number;
  /** The request's cache salt (AddRequest.cacheSalt): a per-window cache (AudioWindows) keys its windows with it. */
  readonly cacheSalt?: string;
}

/** Normalised patches of one image (src/media/imagePatches.ts). */
export interface ImagePatches {
  readonly modality: 'image';
  /** [numPatches][3 * patchSize * patchSize], each patch channel-major; patches in merge-group order. */
  readonly patches: Float32Array;
  /** [numPatches][2]: (row, col) of each patch in the grid. */
  readonly positions: Int32Array;
  readonly patchSize: number;
  readonly mergeSize: number;
  /** Grid size in patches (multiples of mergeSize). */
  readonly gridHeight: number;
  readonly gridWidth: number;
  readonly numPatches: number;
  /** numPatches / mergeSize^2. */
  readonly numEmbeddings: number;
}

/**
 * Patches of a sampled clip (src/media/video/videoPatches.ts): image-shaped patches (each the mean of its temporal
 * patch's frames), gridT temporal groups of gridHeight x gridWidth.
 */
export interface VideoPatches extends Omit<ImagePatches, 'modality'> {
  readonly modality: 'video';
  /** Frames in one patch (2), and the clip's temporal groups: numPatches = gridT * gridHeight * gridWidth. */
  readonly temporalPatchSize: number;
  readonly gridT: number;
}

export type EncoderInput = AudioFeatures | ImagePatches | VideoPatches;
