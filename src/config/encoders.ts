/**
 * Encoder stages (kind encoder): their `encoder:` settings and their generated models. An encoder reads media
 * items from main and feeds its rows to one Thinker, so its output width is that Thinker's hidden size, derived
 * here once (a mismatch would otherwise surface as a shape error inside a stage process).
 */
import type { Static } from '@sinclair/typebox';
import { encoderPresets } from '../../stages/models/encoderSizes.ts';
import { DEFAULT_IMAGE_GRID } from '../../stages/encoders/media/imagePatches.ts';
import { defaults, parseByteSize } from './defaults.ts';
import { suggest, type Problems } from './problems.ts';
import { GeneratedModelYaml, type EncoderYaml } from './schema.ts';
import type { AudioEncoderSize, EncoderFailurePolicy, EncoderSettings, MediaModality, ModelSpec, VisionEncoderSize } from './types.ts';
import { check } from './validate.ts';

export interface EncoderContext {
  readonly index: number;
  readonly stageId: string;
  readonly raw: Record<string, unknown>;
  readonly modality: MediaModality;
  readonly defaultPreset: string;
  readonly defaultSeed: number;
  /** The stages reading from this encoder, with their resolved models. */
  readonly consumers: readonly { readonly stageId: string; readonly index: number; readonly model: ModelSpec | null }[];
}

/** A generated encoder model sized by its preset, overrides, and the Thinker it feeds; null with problems recorded. */
export function resolveGeneratedEncoder(ctx: EncoderContext, problems: Problems): ModelSpec | null {
  const at = ['stages', ctx.index, 'model'];
  const kind = ctx.modality === 'audio' ? 'audio_encoder' : 'vision_encoder';
  const raw = ctx.raw;
  if (!check(GeneratedModelYaml[kind], raw, at, problems)) return null;
  const preset = (raw.preset as string | undefined) ?? ctx.defaultPreset;
  const family = encoderPresets[preset];
  if (!family) {
    const where = raw.preset !== undefined ? [...at, 'preset'] : ['model_preset'];
    problems.add(where, `unknown encoder preset "${preset}"${suggest(preset, Object.keys(encoderPresets))} (presets: ${Object.keys(encoderPresets).join(', ')})`);
    return null;
  }
  const outputSize = encoderOutputSize(ctx, raw.output_size as number | undefined, problems);
  if (outputSize === null) return null;
  const seed = (raw.seed as number | undefined) ?? ctx.defaultSeed;
  const overrides: Record<string, number> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'preset' || key === 'seed' || key === 'output_size') continue;
    overrides[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value as number;
  }
  const size = { ...(ctx.modality === 'audio' ? family.audio : family.vision), ...overrides, outputSize };
  if (size.hiddenSize % size.numHeads !== 0) {
    problems.add([...at, 'hidden_size'], `must be divisible by num_heads (${size.numHeads}), got ${size.hiddenSize}`);
    return null;
  }
  return kind === 'audio_encoder'
    ? { source: 'generated', kind, preset, seed, size: size as AudioEncoderSize }
    : { source: 'generated', kind, preset, seed, size: size as VisionEncoderSize };
}

/** The width of the rows: the hidden size of the Thinker that reads them. */
function encoderOutputSize(ctx: EncoderContext, given: number | undefined, problems: Problems): number | null {
  const at = ['stages', ctx.index, 'model'];
  const thinker = ctx.consumers[0];
  if (!thinker) return null; // "feeds no stage" is reported by the graph rules
  if (thinker.model === null) return null; // the thinker's own problem is already reported
  if (thinker.model.source === 'file') {
    if (given === undefined) {
      problems.add(at, `cannot derive output_size: thinker "${thinker.stageId}" is a file model; set output_size (its hidden size)`);
      return null;
    }
    return given;
  }
  if (thinker.model.kind !== 'thinker') return null;
  const derived = thinker.model.size.hiddenSize;
  if (given !== undefined && given !== derived) {
    problems.add([...at, 'output_size'], `must be hidden_size of thinker "${thinker.stageId}" = ${derived}, got ${given} (leave it out: it is derived)`);
    return null;
  }
  return derived;
}

/** `encoder:` -> EncoderSettings, the graph's on_encoder_failure filling in on_failure. */
export function resolveEncoderSettings(
  raw: Static<typeof EncoderYaml>,
  model: ModelSpec | null,
  graphOnFailure: EncoderFailurePolicy | undefined,
): EncoderSettings {
  const d = defaults.encoder;
  // A file vision model is cut like the generated ones (14 px patches, 2 x 2 merge); the stage checks the
  // merge against the model at load, so a mismatch fails at start-up, not on the first image.
  const grid = model?.source === 'generated' && model.kind === 'vision_encoder' ? model.size : DEFAULT_IMAGE_GRID;
  return {
    modality: raw.modality,
    cacheBytes: parseByteSize(raw.cache_bytes ?? d.cacheBytes),
    budgetEmbeddings: raw.budget_embeddings ?? d.budgetEmbeddings,
    maxBatchSize: raw.max_batch_size ?? d.maxBatchSize,
    batchTimeoutMs: raw.batch_timeout_ms ?? d.batchTimeoutMs,
    onFailure: raw.on_failure ?? graphOnFailure ?? d.onFailure,
    maxAudioSeconds: raw.max_audio_seconds ?? d.maxAudioSeconds,
    timeoutMs: raw.timeout_ms ?? d.timeoutMs,
    imageGrid:
      raw.modality === 'image'
        ? { patchSize: grid.patchSize, mergeSize: grid.mergeSize, minPixels: DEFAULT_IMAGE_GRID.minPixels, maxPixels: DEFAULT_IMAGE_GRID.maxPixels }
        : null,
  };
}
