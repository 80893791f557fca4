/**
 * Sizes of the generated tiny-omni encoders. They live here rather than in src/config/types.ts because the
 * stage graph does not describe generated encoders yet; when it does, these types move there unchanged.
 *
 * outputSize is the Thinker's hiddenSize: encoder rows are spliced into the Thinker's inputs_embeds, so the
 * two must agree. It is a parameter (not a preset field) and is always taken from the Thinker.
 */

/** Mel frames per audio embedding: the audio encoder's two stride-2 convolutions (100 frames/s -> 25/s). */
export const AUDIO_FRAMES_PER_EMBEDDING = 4;

export type EncoderModelKind = 'audio_encoder' | 'vision_encoder';

export interface AudioEncoderSize {
  /** Mel bins of the input features (80, as Whisper's front end). */
  readonly numMelBins: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export interface VisionEncoderSize {
  /** Side of a square patch in pixels (14, as CLIP ViT-L/14 and Qwen2-VL). */
  readonly patchSize: number;
  /** mergeSize x mergeSize neighbouring patches become one embedding (2, as Qwen2-VL). */
  readonly mergeSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export type EncoderSize = AudioEncoderSize | VisionEncoderSize;

export interface EncoderPreset {
  readonly audio: Omit<AudioEncoderSize, 'outputSize'>;
  readonly vision: Omit<VisionEncoderSize, 'outputSize'>;
}

/** Keyed like stages/models/presets.ts, so a stage graph's model_preset picks both. */
export const encoderPresets: Readonly<Record<string, EncoderPreset>> = {
  tiny: {
    audio: { numMelBins: 80, hiddenSize: 128, numLayers: 2, numHeads: 4, intermediateSize: 512 },
    vision: { patchSize: 14, mergeSize: 2, hiddenSize: 128, numLayers: 2, numHeads: 4, intermediateSize: 512 },
  },
  omni: {
    audio: { numMelBins: 80, hiddenSize: 256, numLayers: 4, numHeads: 4, intermediateSize: 1024 },
    vision: { patchSize: 14, mergeSize: 2, hiddenSize: 256, numLayers: 4, numHeads: 4, intermediateSize: 1024 },
  },
};
