/**
 * An encoder stage's preprocessing of one media item, from the bytes main sent: decode (WAV/pcm16 -> 16 kHz,
 * PNG/JPEG -> patches), the cache key (content hash + encoder identity), and the encoder input. Audio features
 * (the log-mel) are computed only when the item is actually encoded: a cache hit skips them. Bytes seen before
 * skip the decode as well: ContentKeys remembers which content key they decoded to.
 */
import type { EncoderSettings } from '../../src/common/graph.ts';
import { mediaInvalid } from '../../src/media/mediaError.ts';
import { prepareAudio, prepareImage } from '../../src/media/prepareMedia.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import type { EncodeItem } from '../../src/worker/messages.ts';
import type { MediaBody } from '../../src/common/payloads.ts';

export interface PreparedItem {
  readonly key: string;
  readonly numEmbeddings: number;
  /** The encoder input (computed on first call). */
  input(): EncoderInput;
}

/** Throws CHORUS_ERR_MEDIA_INVALID naming the item when the bytes do not decode to what main promised. */
export function prepareItem(
  item: EncodeItem,
  media: MediaBody,
  settings: EncoderSettings,
  encoderIdentity: string,
  /** The request's cache partition (AddRequest.cacheSalt): in the key, and in audio's per-window keys. */
  cacheSalt?: string,
): PreparedItem {
  const what = item.what;
  if (settings.modality === 'audio') {
    if (media.format !== 'wav' && media.format !== 'pcm16')
      throw mediaInvalid(what, `the audio encoder got format ${media.format}`);
    const audio = prepareAudio(media.bytes, media.format, {
      pcm16RateHz: media.sampleRateHz,
      maxSeconds: settings.maxAudioSeconds,
      what,
    });
    checkCount(item, audio.numEmbeddings);
    const salted = cacheSalt === undefined ? {} : { cacheSalt };
    return {
      key: audio.cacheKey(encoderIdentity, cacheSalt),
      numEmbeddings: audio.numEmbeddings,
      input: () => ({ ...audio.features(), ...salted }),
    };
  }
  const image = prepareImage(media.bytes, { grid: settings.imageGrid ?? undefined, what });
  checkCount(item, image.numEmbeddings);
  const key = image.cacheKey(encoderIdentity, cacheSalt);
  return { key, numEmbeddings: image.numEmbeddings, input: () => image.patches };
}

/** Main counted the item's rows from its header; the decoded media must agree, or the prompt has the wrong span. */
function checkCount(item: EncodeItem, numEmbeddings: number): void {
  if (numEmbeddings !== item.numEmbeddings) {
    throw mediaInvalid(
      item.what,
      `decodes to ${numEmbeddings} embeddings but its header promised ${item.numEmbeddings}: the file is inconsistent`,
    );
  }
}

/** Raw media bytes seen lately -> the content key they decoded to (bounded; the oldest entries go first). */
export class ContentKeys {
  readonly #byBytes = new Map<string, string>();

  constructor(private readonly maxEntries = 4096) {}

  get(bytesKey: string): string | undefined {
    return this.#byBytes.get(bytesKey);
  }

  set(bytesKey: string, contentKey: string): void {
    this.#byBytes.delete(bytesKey);
    this.#byBytes.set(bytesKey, contentKey);
    if (this.#byBytes.size > this.maxEntries) this.#byBytes.delete(this.#byBytes.keys().next().value!);
  }
}
