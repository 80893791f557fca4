/**
 * Named sizes of the generated tiny-omni family. A stage's YAML picks a preset and may override any field.
 * "tiny" answers 100 tokens with audio in a few seconds on 2 cores; "omni" is shaped like a real omni model
 * (wider, deeper) for benchmarks. Numbers are model hyper-parameters, not tuning knobs of the runtime.
 */
import type { Code2WavSize, TalkerSize, ThinkerSize } from '../../src/common/modelSpec.ts';

export type TalkerPresetSize = Omit<TalkerSize, 'conditionDim'>;

export interface FamilyPreset {
  readonly thinker: ThinkerSize;
  readonly talker: TalkerPresetSize;
  readonly code2wav: Code2WavSize;
}

export const presets: Readonly<Record<string, FamilyPreset>> = {
  tiny: {
    thinker: {
      vocabSize: 512,
      hiddenSize: 256,
      numLayers: 4,
      numHeads: 4,
      intermediateSize: 1024,
      maxPositions: 4096,
      acceptLayer: 2,
      logitScale: 16,
      weights: 'q4',
    },
    talker: {
      codebookSize: 1024,
      numCodebooks: 16,
      hiddenSize: 256,
      numLayers: 4,
      numHeads: 4,
      intermediateSize: 1024,
      maxPositions: 8192,
      framesPerToken: 2,
      logitScale: 16,
      weights: 'q4',
    },
    code2wav: {
      numCodebooks: 16,
      codebookSize: 1024,
      hiddenSize: 128,
      numLayers: 4,
      kernelSize: 5,
      samplesPerFrame: 1920,
      sampleRateHz: 24000,
      streamingState: true,
    },
  },
  omni: {
    thinker: {
      vocabSize: 2048,
      hiddenSize: 512,
      numLayers: 8,
      numHeads: 8,
      intermediateSize: 2048,
      maxPositions: 8192,
      acceptLayer: 4,
      logitScale: 16,
      weights: 'q4',
    },
    talker: {
      codebookSize: 2048,
      numCodebooks: 16,
      hiddenSize: 512,
      numLayers: 6,
      numHeads: 8,
      intermediateSize: 2048,
      maxPositions: 16384,
      framesPerToken: 2,
      logitScale: 16,
      weights: 'q4',
    },
    code2wav: {
      numCodebooks: 16,
      codebookSize: 2048,
      hiddenSize: 256,
      numLayers: 6,
      kernelSize: 5,
      samplesPerFrame: 1920,
      sampleRateHz: 24000,
      streamingState: true,
    },
  },
};
