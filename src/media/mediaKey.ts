/**
 * The encoder cache key: sha256 over the decoded media (not the request's bytes, so the same sound as WAV
 * or pcm16, or the same picture re-encoded, still hits) plus the encoder's identity (a different model
 * must never serve another model's rows). The shape goes in too: the same samples as a different grid
 * are a different input.
 *
 * Audio hashes its 16 kHz samples, which come before the mel features, so a hit skips those as well.
 * Images hash the normalised patches the encoder reads, so a change of grid settings changes the key.
 *
 * A request's cache salt (AddRequest.cacheSalt, a digest) goes in too when it has one: the same media under another
 * salt is another key, so a tenant never takes, nor times, another's encoder output (docs/security.md).
 */
import { createHash } from 'node:crypto';
import type { MediaBody } from '../common/payloads.ts';
import type { ImagePatches } from './types.ts';

/** Bump when the front ends (mel features, image resize/normalise) change what a given input becomes. */
// 2: log-mel floor fixed instead of relative to the clip's loudest value; 3: a generated vision encoder attends within
// a clip's temporal groups (its rows of a clip changed)
export const PREPROCESS_VERSION = 3;

function bytesOf(a: Float32Array | Int32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function header(modality: string, encoderId: string, dims: readonly number[], cacheSalt: string | undefined): string {
  // JSON keeps the fields apart: no concatenation of two fields can equal another pair's. No salt: the key of before.
  const salt = cacheSalt === undefined ? {} : { cacheSalt };
  return JSON.stringify({ modality, encoderId, dims, preprocess: PREPROCESS_VERSION, ...salt });
}

export function audioCacheKey(samples16k: Float32Array, encoderId: string, cacheSalt?: string): string {
  return createHash('sha256')
    .update(header('audio', encoderId, [samples16k.length], cacheSalt))
    .update(bytesOf(samples16k))
    .digest('hex');
}

/** One window of an audio item's mel features (OnnxEncoderRunner's per-window cache). */
export function melWindowKey(mel: Float32Array, numFrames: number, encoderId: string, cacheSalt?: string): string {
  return createHash('sha256')
    .update(header('audio-window', encoderId, [mel.length, numFrames], cacheSalt))
    .update(bytesOf(mel))
    .digest('hex');
}

export function imageCacheKey(image: ImagePatches, encoderId: string, cacheSalt?: string): string {
  const dims = [image.gridHeight, image.gridWidth, image.patchSize, image.mergeSize];
  return createHash('sha256')
    .update(header('image', encoderId, dims, cacheSalt))
    .update(bytesOf(image.patches))
    .digest('hex');
}

/**
 * The key of an item's bytes as received, before decoding, with how to read them (format, pcm16 rate): the same
 * bytes decode the same way. The encoder-output store and an encoder's bytes -> content map look items up by it.
 */
export function bytesKeyOf(media: MediaBody): string {
  // A video's sampled frames: main hashed their source with its sampling (modalities/video.ts); that stands for them.
  if (media.video) {
    const v = media.video;
    return createHash('sha256')
      .update(JSON.stringify(['video', v.sourceKey, v.numFrames, v.width, v.height, v.fps]))
      .digest('hex');
  }
  return createHash('sha256')
    .update(JSON.stringify([media.format, media.sampleRateHz ?? null]))
    .update(media.bytes)
    .digest('hex');
}

/**
 * The bytes key within a cache partition (the EC store's entry; an encoder maps it to a content key made with the
 * same salt): the same bytes under another salt are another entry. Main and the encoder key alike through this.
 */
export function saltedBytesKey(bytesKey: string, cacheSalt: string | undefined): string {
  return cacheSalt === undefined ? bytesKey : `${bytesKey} ${cacheSalt}`;
}
