/**
 * Client media -> the engine's content parts (src/common/engine.ts), for both protocols: base64 audio, and
 * images from data: URLs or (HTTP only) from an allow-listed remote URL. Only what the bytes' transport needs is
 * checked here (base64, the data URL, the declared media type); whether the bytes are a usable WAV, PNG or
 * JPEG is the engine's media probe's business, which names the item the same way.
 *
 * Items are named as the engine names them, `messages[0].content[1] (image)`, so a client sees one style
 * whichever layer refused its media.
 */
import type { ContentPart } from '../../common/engine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { mediaInvalid } from '../../media/mediaError.ts';
import { decodeBase64, resolveMediaUrl } from '../../media/mediaUrl.ts';
import { decodeBase64Strict } from '../pcm.ts';
import type { MediaFetchLimits } from './fetchMedia.ts';

export type MediaPart = Extract<ContentPart, { type: 'audio' | 'image' }>;

export interface MediaSources extends MediaFetchLimits {
  /** URL prefixes images may be fetched from; empty = remote URLs are refused. */
  readonly allowList: readonly string[];
}

/** Media types a data: URL may declare for an image ('' = none given: the bytes are sniffed). */
const IMAGE_TYPES = new Set(['', 'image/png', 'image/jpeg', 'image/jpg']);

/**
 * Base64 on the server thread: the fast strict decoder, and only when it refuses, the lenient one that also
 * takes whitespace (line-wrapped base64) and throws the error naming the item.
 */
function decode(base64: string, what: string): Uint8Array {
  return decodeBase64Strict(base64) ?? decodeBase64(base64, what);
}

export function audioPart(base64: string, format: 'wav' | 'pcm16', what: string, sampleRateHz?: number): MediaPart {
  const data = decode(base64, what);
  if (data.byteLength === 0) throw mediaInvalid(what, 'audio data is empty');
  return { type: 'audio', data, format, ...(sampleRateHz !== undefined ? { sampleRateHz } : {}) };
}

/** An image from a data: URL; an allowed remote URL is returned for the caller to fetch (fetchMedia). */
export function inlineImage(url: string, what: string, allowList: readonly string[]): MediaPart | URL {
  const fast = /^data:(image\/(?:png|jpeg|jpg))?;base64,/i.exec(url);
  const inline = fast ? decodeBase64Strict(url.slice(fast[0].length)) : null;
  // the common case, without a regex over the payload
  if (inline && inline.length > 0) return { type: 'image', data: inline };
  const resolved = resolveMediaUrl(url, allowList, what);
  if (resolved.kind === 'remote') return resolved.url;
  const { mediaType, bytes } = resolved.data;
  if (!IMAGE_TYPES.has(mediaType))
    throw mediaInvalid(what, `the data URL holds ${mediaType}; send image/png or image/jpeg`);
  if (bytes.byteLength === 0) throw mediaInvalid(what, 'the data URL holds no bytes');
  return { type: 'image', data: bytes };
}

/** Realtime takes images inline only (an item is stored synchronously, in event order; nothing is fetched). */
export function realtimeImagePart(url: string, what: string): MediaPart {
  try {
    return inlineImage(url, what, []) as MediaPart;
  } catch (err) {
    if (err instanceof ChorusError && err.code === ErrorCodes.MEDIA_REMOTE_URL) {
      throw new ChorusError(
        ErrorCodes.MEDIA_REMOTE_URL,
        `${what}: realtime sessions take images inline only: send a data: URL (data:image/png;base64,...)`,
        { cause: err },
      );
    }
    throw err;
  }
}
