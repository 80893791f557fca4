/**
 * An encoder stage's preprocessing of one media item, from the bytes main sent: decode (WAV/pcm16 -> 16 kHz,
 * PNG/JPEG -> patches), the cache key (content hash + encoder identity), and the encoder input. Audio features
 * (the log-mel) are computed only when the item is actually encoded: a cache hit skips them.
 */
import type { EncoderSettings } from '../../config/types.ts';
import { mediaInvalid } from '../../../stages/encoders/media/mediaError.ts';
import { prepareAudio, prepareImage } from '../../../stages/encoders/media/prepareMedia.ts';
import type { EncoderInput } from '../../../stages/encoders/types.ts';
import type { EncodeItem, MediaChunkPayload } from '../messages.ts';

export interface PreparedItem {
  readonly key: string;
  readonly numEmbeddings: number;
  /** The encoder input (computed on first call). */
  input(): EncoderInput;
}

/** Throws CHORUS_ERR_MEDIA_INVALID naming the item when the bytes do not decode to what main promised. */
export function prepareItem(item: EncodeItem, payload: MediaChunkPayload, bytes: Uint8Array, settings: EncoderSettings, encoderIdentity: string): PreparedItem {
  const what = item.what;
  if (settings.modality === 'audio') {
    if (payload.format !== 'wav' && payload.format !== 'pcm16') throw mediaInvalid(what, `the audio encoder got format ${payload.format}`);
    const audio = prepareAudio(bytes, payload.format, { pcm16RateHz: payload.sampleRateHz, maxSeconds: settings.maxAudioSeconds, what });
    checkCount(item, audio.numEmbeddings);
    return { key: audio.cacheKey(encoderIdentity), numEmbeddings: audio.numEmbeddings, input: () => audio.features() };
  }
  const image = prepareImage(bytes, { grid: settings.imageGrid ?? undefined, what });
  checkCount(item, image.numEmbeddings);
  return { key: image.cacheKey(encoderIdentity), numEmbeddings: image.numEmbeddings, input: () => image.patches };
}

/** Main counted the item's rows from its header; the decoded media must agree, or the prompt has the wrong span. */
function checkCount(item: EncodeItem, numEmbeddings: number): void {
  if (numEmbeddings !== item.numEmbeddings) {
    throw mediaInvalid(item.what, `decodes to ${numEmbeddings} embeddings but its header promised ${item.numEmbeddings}: the file is inconsistent`);
  }
}
