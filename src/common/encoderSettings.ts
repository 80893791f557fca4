/**
 * The settings of an encoder stage (the stage graph's `encoder:`, kind encoder): its modality, budgets, batching,
 * failure policy, and for vision the image grid and the video sampling and fallback (docs/video.md).
 */
import type { Modality } from './modality.ts';

/** The one modality type (src/common/modality.ts), under the name the stage graph has used. */
export type MediaModality = Modality;

/** What a Thinker does when an encoder cannot deliver an item: fail the request, or answer without that item. */
export type EncoderFailurePolicy = 'fail' | 'text_only';

/** How images are cut into patches for a vision encoder; main and the encoder stage must agree on it. */
export interface ImageGridSettings {
  readonly patchSize: number;
  readonly mergeSize: number;
  readonly minPixels: number;
  readonly maxPixels: number;
}

/** Settings of an encoder stage (kind encoder); absent on every other kind. */
export interface EncoderSettings {
  readonly modality: MediaModality;
  /** Byte budget of the encoder output cache (per replica). */
  readonly cacheBytes: number;
  /** Embeddings that may start encoding in one step (the encoder compute budget). */
  readonly budgetEmbeddings: number;
  /** Items of one encoder run at most. */
  readonly maxBatchSize: number;
  /** How long a partial batch waits for more items before it runs anyway. */
  readonly batchTimeoutMs: number;
  readonly onFailure: EncoderFailurePolicy;
  /** Audio items longer than this are refused at admission. */
  readonly maxAudioSeconds: number;
  /** From admission: an item whose rows have not reached the Thinker by then has failed (on_failure applies). */
  readonly timeoutMs: number;
  /**
   * One encoder run's working memory at most (estimated from the model before the run: src/media/video/
   * encodeMemory.ts); null: no cap. A run over it is split, an item over it alone fails with ENCODE_MEMORY (main then
   * re-encodes a clip with fewer or smaller frames: encoder.video.fallback).
   */
  readonly maxEncodeBytes: number | null;
  /** Vision only (image and video: the patch and merge sizes of the model). */
  readonly imageGrid: ImageGridSettings | null;
  /** Video only: sampling defaults and the decoder's limits (`encoder.video:`). */
  readonly video: VideoSettings | null;
}

/** How a video encoder stage samples clips by default, and what the decoder in main accepts (docs/video.md). */
export interface VideoSettings {
  /** Frames per second sampled when a request names none (mm_processor_kwargs.fps). */
  readonly fps: number;
  /** Frames per clip at most (mm_processor_kwargs.max_frames): a longer clip is sampled uniformly. */
  readonly maxFrames: number;
  /** Area of a sampled frame at most, in pixels (sides multiples of patch x merge). */
  readonly framePixels: number;
  /** Frames in one temporal patch (Qwen2.5-VL: 2). */
  readonly temporalPatchSize: number;
  /** Longer clips are refused (CHORUS_ERR_VIDEO_TOO_LONG). */
  readonly maxSeconds: number;
  /** Bytes of a video (or its frame images) at most (CHORUS_ERR_VIDEO_TOO_LARGE). */
  readonly maxInputBytes: number;
  /** Bytes of the frames sampled from one clip at most, before the max_frames pick (CHORUS_ERR_VIDEO_TOO_LARGE). */
  readonly maxFrameBytes: number;
  /** The decoder's time limit per clip (CHORUS_ERR_VIDEO_DECODE_TIMEOUT). */
  readonly decodeTimeoutMs: number;
  /** Decoded clips main keeps for the next question about the same clip, in bytes (src/media/video/DecodedClips.ts). */
  readonly decodedCacheBytes: number;
  /** use_audio_in_video: seconds per chunk of the frames/track interleave (Qwen2.5-Omni's seconds_per_chunk). */
  readonly audioChunkSeconds: number;
  /**
   * Patches of one clip's encode at most: the vision encoder attends over all of a clip's patches at once, so its
   * working memory grows with their square (src/media/video/encodeMemory.ts). A larger clip steps down under the
   * fallback (or is refused without one).
   */
  readonly maxPatchesPerEncode: number;
  /**
   * A clip's rows go to the Thinker in pieces of this many temporal groups, each as soon as it is encoded (one piece
   * an encoder step), so the Thinker prefills a clip while the rest of it encodes; null: a clip's rows in one chunk.
   * Only where the encoder attends within each group (the generated one): elsewhere a clip is encoded whole.
   */
  readonly streamGroups: number | null;
  /** How a clip that does not fit is served with fewer or smaller frames (null: refused instead). */
  readonly fallback: VideoFallbackSettings | null;
}

/** `encoder.video.fallback`: the steps down of a clip that does not fit, and their floor (docs/video.md). */
export interface VideoFallbackSettings {
  /** Each step keeps this share of the frames... */
  readonly framesFactor: number;
  /** ...down to this many; then frames shrink. */
  readonly minFrames: number;
  /** Each step then keeps this share of a frame's area... */
  readonly pixelsFactor: number;
  /** ...down to this area: the floor (past it the clip is refused). */
  readonly minFramePixels: number;
}
