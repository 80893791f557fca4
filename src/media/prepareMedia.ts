/**
 * One call per media item, from what a request carries to what the encoder path needs: the embedding
 * count (for the placeholder expansion), the cache key, and the encoder input. Errors name the item
 * (`what`) so the front end can answer 400 / an error event pointing at it.
 *
 * Audio keeps its 16 kHz samples and computes the log-mel features only when asked: on a cache hit they
 * are never needed. Images are decoded and cut into patches at once (the patches are the cache key's input).
 */
import { audioCacheKey, imageCacheKey } from './mediaKey.ts';
import type { AudioFeatures, ImagePatches } from './types.ts';
import { audioEmbeddingCount, audioFeatures, decodeAudio, type AudioDecodeOptions, type AudioFormat } from './audio.ts';
import { decodeImage } from './image.ts';
import { DEFAULT_IMAGE_GRID, imagePatches, type ImageGridConfig } from './imagePatches.ts';
import { decodeBase64, resolveMediaUrl } from './mediaUrl.ts';

export interface PreparedAudio {
  readonly modality: 'audio';
  readonly samples16k: Float32Array;
  readonly numEmbeddings: number;
  /** The encoder cache key (mediaKey.ts), within the request's cache salt when it has one. */
  cacheKey(encoderIdentity: string, cacheSalt?: string): string;
  /** The encoder input (log-mel), computed on first call. */
  features(): AudioFeatures;
}

export interface PreparedImage {
  readonly modality: 'image';
  /** Source size in pixels. */
  readonly width: number;
  readonly height: number;
  readonly patches: ImagePatches;
  readonly numEmbeddings: number;
  cacheKey(encoderIdentity: string, cacheSalt?: string): string;
}

export type PreparedMedia = PreparedAudio | PreparedImage;

export function prepareAudio(bytes: Uint8Array, format: AudioFormat, options: AudioDecodeOptions = {}): PreparedAudio {
  const samples16k = decodeAudio(bytes, format, options);
  let features: AudioFeatures | undefined;
  return {
    modality: 'audio',
    samples16k,
    numEmbeddings: audioEmbeddingCount(samples16k.length),
    cacheKey: (encoderIdentity, cacheSalt) => audioCacheKey(samples16k, encoderIdentity, cacheSalt),
    features: () => (features ??= audioFeatures(samples16k)),
  };
}

/** Chat `input_audio`: base64 data + format. */
export function prepareAudioBase64(data: string, format: AudioFormat, options: AudioDecodeOptions = {}): PreparedAudio {
  return prepareAudio(decodeBase64(data, options.what ?? 'input_audio'), format, options);
}

export interface ImagePrepareOptions {
  readonly grid?: ImageGridConfig;
  readonly what?: string;
}

export function prepareImage(bytes: Uint8Array, options: ImagePrepareOptions = {}): PreparedImage {
  const what = options.what ?? 'image';
  const image = decodeImage(bytes, what);
  const patches = imagePatches(image, options.grid ?? DEFAULT_IMAGE_GRID, what);
  return {
    modality: 'image',
    width: image.width,
    height: image.height,
    patches,
    numEmbeddings: patches.numEmbeddings,
    cacheKey: (encoderIdentity, cacheSalt) => imageCacheKey(patches, encoderIdentity, cacheSalt),
  };
}

/**
 * Chat `image_url` / realtime `input_image`: a data: URL is prepared here; a remote URL the allow-list
 * permits comes back for the caller to fetch (then prepareImage on the bytes); anything else throws
 * CHORUS_ERR_MEDIA_REMOTE_URL or CHORUS_ERR_MEDIA_INVALID.
 */
export function prepareImageUrl(
  url: string,
  allowList: readonly string[] = [],
  options: ImagePrepareOptions = {},
): PreparedImage | { readonly remote: URL } {
  const resolved = resolveMediaUrl(url, allowList, options.what ?? 'image_url');
  if (resolved.kind === 'remote') return { remote: resolved.url };
  return prepareImage(resolved.data.bytes, options);
}
