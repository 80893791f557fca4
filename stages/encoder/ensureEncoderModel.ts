/**
 * Generated encoders go through the same folder cache as the stage models (ensureGeneratedModel): one
 * folder per (kind, sizes, seed, generator version), built once, atomically. The encoders carry their own
 * generator version so changing an encoder graph never rebuilds the Thinker, Talker or Code2Wav.
 */
import type { GeneratedModelSpec } from '../../src/common/modelSpec.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { buildAudioEncoder } from './audioEncoderModel.ts';
import { encoderPresets } from './encoderSizes.ts';
import { ensureGeneratedModel, type ModelBuildProgress, type ModelFiles } from '../models/modelCache.ts';
import { buildVisionEncoder } from './visionEncoderModel.ts';

/** Bump when an encoder generator's graph or weights change. */
export const ENCODER_GENERATOR_VERSION = 2; // 2: windowed audio encoder, log-mel with a fixed floor

/** The generated encoder variants of a stage's model spec (src/common/graph.ts). */
export type EncoderModelSpec = Extract<GeneratedModelSpec, { readonly kind: 'audio_encoder' | 'vision_encoder' }>;

function presetOf(preset: string) {
  const found = encoderPresets[preset];
  if (!found) {
    throw new ChorusError(
      ErrorCodes.CONFIG_INVALID,
      `unknown encoder preset "${preset}" (presets: ${Object.keys(encoderPresets).join(', ')})`,
    );
  }
  return found;
}

/** Which part of an encoder preset family sizes each generated encoder kind. */
const FAMILY_PART = { audio_encoder: 'audio', vision_encoder: 'vision' } as const;

/** An encoder spec from a preset; thinkerHiddenSize is the width of the rows it must produce. */
export function encoderSpec<K extends EncoderModelSpec['kind']>(
  kind: K,
  preset: string,
  thinkerHiddenSize: number,
  seed: number,
  overrides: Partial<Extract<EncoderModelSpec, { readonly kind: K }>['size']> = {},
): EncoderModelSpec {
  const size = { ...presetOf(preset)[FAMILY_PART[kind]], outputSize: thinkerHiddenSize, ...overrides };
  return { source: 'generated', kind, preset, seed, size } as EncoderModelSpec;
}

export function ensureEncoderModel(
  spec: EncoderModelSpec,
  modelsDir: string,
  onProgress?: (p: ModelBuildProgress) => void,
): Promise<ModelFiles> {
  return ensureGeneratedModel(
    {
      kind: spec.kind,
      preset: spec.preset,
      seed: spec.seed,
      size: spec.size,
      generatorVersion: ENCODER_GENERATOR_VERSION,
      build: (progress) =>
        spec.kind === 'audio_encoder'
          ? buildAudioEncoder(spec.size, spec.seed, progress)
          : buildVisionEncoder(spec.size, spec.seed, progress),
    },
    modelsDir,
    onProgress,
  );
}
