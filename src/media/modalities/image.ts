/**
 * Images: `image_url` parts (a data: URL, or an allow-listed URL the front end fetches) and Realtime `input_image`
 * -> PNG or JPEG bytes, cut into 14 px patches merged 2 x 2 in the image encoder stage (src/media/imagePatches.ts),
 * counted in main from the header's width and height.
 */
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { MediaBody } from '../../common/payloads.ts';
import { mediaInvalid } from '../mediaError.ts';
import { decodeBase64Strict, resolveMediaUrl } from '../mediaUrl.ts';
import { prepareImage } from '../prepareMedia.ts';
import { probeImage } from '../probeMedia.ts';
import type { ModalityDef, PartOf } from './ModalityDef.ts';

export const image: ModalityDef<'image'> = {
  name: 'image',
  encoder: 'vision',
  formats: ['image'],
  // Named by its bytes key, as a clip is: a camera frame prefilled already is adopted from the prefix cache at once,
  // without waiting for the encoder's round trip (a cache hit there, but behind whatever it is encoding).
  keyedBlocks: true,

  shapeProblem(part, at) {
    return part.data instanceof Uint8Array ? null : `${at}.data must be the image bytes (a Uint8Array)`;
  },

  layout(part, settings, what) {
    return { numEmbeddings: probeImage(part.data, settings.imageGrid ?? undefined, what).numEmbeddings };
  },

  body(part, item, what): MediaBody {
    return { kind: 'media', item, format: 'image', what, bytes: part.data };
  },

  prepare(body, settings, encoderIdentity, cacheSalt) {
    const prepared = prepareImage(body.bytes, { grid: settings.imageGrid ?? undefined, what: body.what });
    return {
      key: prepared.cacheKey(encoderIdentity, cacheSalt),
      numEmbeddings: prepared.numEmbeddings,
      input: () => prepared.patches,
    };
  },
};

/** Media types a data: URL may declare for an image ('' = none given: the bytes are sniffed). */
const IMAGE_TYPES = new Set(['', 'image/png', 'image/jpeg', 'image/jpg']);

/**
 * An image from a data: URL; an allowed remote URL is returned for the caller to fetch (fetchMedia). Only the
 * transport is checked here (base64, the declared type); whether the bytes are a usable image is `layout`'s business.
 */
export function imagePart(url: string, what: string, allowList: readonly string[]): PartOf<'image'> | URL {
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
export function realtimeImagePart(url: string, what: string): PartOf<'image'> {
  try {
    return imagePart(url, what, []) as PartOf<'image'>;
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
