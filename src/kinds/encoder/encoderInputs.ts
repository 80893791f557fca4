/**
 * An encoder stage's preprocessing of one media item, from the bytes main sent: decode (WAV/pcm16 -> 16 kHz,
 * PNG/JPEG -> patches), the cache key (content hash + encoder identity), and the encoder input. Audio features
 * (the log-mel) are computed only when the item is actually encoded: a cache hit skips them.
 */
import type { EncoderSettings } from '../../common/graph.ts';
import { mediaInvalid } from '../../media/mediaError.ts';
import { prepareAudio, prepareImage } from '../../media/prepareMedia.ts';
import type { EncoderInput } from '../../media/types.ts';
import type { EncodeItem } from '../../worker/messages.ts';
import type { MediaBody } from '../../common/payloads.ts';

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
    return { key: audio.cacheKey(encoderIdentity), numEmbeddings: audio.numEmbeddings, input: () => audio.features() };
  }
  const image = prepareImage(media.bytes, { grid: settings.imageGrid ?? undefined, what });
  checkCount(item, image.numEmbeddings);
  return { key: image.cacheKey(encoderIdentity), numEmbeddings: image.numEmbeddings, input: () => image.patches };
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
