/**
 * Encoder stages (kind encoder): their `encoder:` settings. Their generated models are sized by the encoder
 * descriptor (stages/encoder), from the Thinker they feed.
 */
import type { Static } from '@sinclair/typebox';
import { DEFAULT_IMAGE_GRID } from '../media/imagePatches.ts';
import { defaults, parseByteSize } from './defaults.ts';
import type { EncoderYaml, VideoYaml } from './schema.ts';
import type { EncoderFailurePolicy, EncoderSettings, VideoSettings } from '../common/encoderSettings.ts';
import type { ModelSpec } from '../common/modelSpec.ts';

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
    maxEncodeBytes: raw.max_encode_bytes === undefined ? null : parseByteSize(raw.max_encode_bytes),
    // A video encoder always samples; an image encoder serves video too when it has `video:` settings.
    video:
      raw.modality === 'video' || (raw.modality === 'image' && raw.video !== undefined)
        ? resolveVideoSettings(raw.video ?? {})
        : null,
    imageGrid:
      raw.modality === 'image' || raw.modality === 'video'
        ? {
            patchSize: grid.patchSize,
            mergeSize: grid.mergeSize,
            minPixels: DEFAULT_IMAGE_GRID.minPixels,
            maxPixels: DEFAULT_IMAGE_GRID.maxPixels,
          }
        : null,
  };
}

function resolveVideoSettings(raw: Static<typeof VideoYaml>): VideoSettings {
  const d = defaults.video;
  return {
    fps: raw.fps ?? d.fps,
    maxFrames: raw.max_frames ?? d.maxFrames,
    framePixels: raw.frame_pixels ?? d.framePixels,
    temporalPatchSize: d.temporalPatchSize,
    maxSeconds: raw.max_seconds ?? d.maxSeconds,
    maxInputBytes: parseByteSize(raw.max_input_bytes ?? d.maxInputBytes),
    maxFrameBytes: parseByteSize(raw.max_frame_bytes ?? d.maxFrameBytes),
    decodeTimeoutMs: raw.decode_timeout_ms ?? d.decodeTimeoutMs,
    decodedCacheBytes: parseByteSize(raw.decoded_cache_bytes ?? d.decodedCacheBytes),
    audioChunkSeconds: raw.audio_chunk_seconds ?? d.audioChunkSeconds,
    maxPatchesPerEncode: raw.max_patches_per_encode ?? d.maxPatchesPerEncode,
    streamGroups: raw.stream_groups === false ? null : (raw.stream_groups ?? d.streamGroups),
    fallback:
      raw.fallback === false
        ? null
        : {
            framesFactor: raw.fallback?.frames_factor ?? d.fallback.framesFactor,
            minFrames: raw.fallback?.min_frames ?? d.fallback.minFrames,
            pixelsFactor: raw.fallback?.pixels_factor ?? d.fallback.pixelsFactor,
            minFramePixels: raw.fallback?.min_frame_pixels ?? d.fallback.minFramePixels,
          },
  };
}
