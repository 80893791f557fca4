/**
 * An encoder stage's preprocessing of one media item, from the bytes main sent: its modality's `prepare` (decode,
 * the content key: content hash + encoder identity, and the encoder input; src/media/modalities). Audio features
 * (the log-mel) and video patches are computed only when the item is actually encoded: a cache hit skips them. Bytes
 * seen before skip the decode as well: ContentKeys remembers which content key they decoded to.
 */
import type { EncoderSettings } from '../../src/common/encoderSettings.ts';
import { mediaInvalid } from '../../src/media/mediaError.ts';
import { modalitiesServed, modalityOfBody, type PreparedItem } from '../../src/media/modalities/index.ts';
import type { EncodeItem } from '../../src/worker/messages.ts';
import type { MediaBody } from '../../src/common/payloads.ts';

export type { PreparedItem };

/** Throws CHORUS_ERR_MEDIA_INVALID naming the item when the bytes do not decode to what main promised. */
export function prepareItem(
  item: EncodeItem,
  media: MediaBody,
  settings: EncoderSettings,
  encoderIdentity: string,
  /** The request's cache partition (AddRequest.cacheSalt): in the key, and in audio's per-window keys. */
  cacheSalt?: string,
): PreparedItem {
  const def = modalityOfBody(media);
  if (!modalitiesServed(settings).includes(def.name))
    throw mediaInvalid(item.what, `this encoder encodes ${modalitiesServed(settings).join(' and ')}, not ${def.name}`);
  const prepared = def.prepare({ ...media, what: item.what }, settings, encoderIdentity, cacheSalt);
  // Main counted the item's rows from what it held; the decoded media must agree, or the prompt has the wrong span.
  if (prepared.numEmbeddings !== item.numEmbeddings) {
    throw mediaInvalid(
      item.what,
      `decodes to ${prepared.numEmbeddings} embeddings but its header promised ${item.numEmbeddings}: the file is ` +
        'inconsistent',
    );
  }
  return prepared;
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
