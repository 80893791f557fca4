/**
 * Presets of the generated tiny-omni encoders. The size types live in src/common/modelSpec.ts (the stage graph
 * describes generated encoders); they are re-exported here for the model builders.
 *
 * outputSize is the Thinker's hiddenSize: encoder rows are spliced into the Thinker's inputs_embeds, so the
 * two must agree. It is a parameter (not a preset field) and is always taken from the Thinker.
 */
import type { AudioEncoderSize, VisionEncoderSize } from '../../src/common/modelSpec.ts';

export type { AudioEncoderSize, EncoderModelKind, EncoderSize, VisionEncoderSize } from '../../src/common/modelSpec.ts';

export { AUDIO_FRAMES_PER_EMBEDDING } from '../../src/media/audio.ts';

export interface EncoderPreset {
  readonly audio: Omit<AudioEncoderSize, 'outputSize'>;
  readonly vision: Omit<VisionEncoderSize, 'outputSize'>;
}

/** Keyed like stages/generator/presets.ts, so a stage graph's model_preset picks both. */
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
