/**
 * The block key of a media item whose modality names its prefix-cache blocks by key (video, images: keyedBlocks):
 * a hash of its bytes key (source, sampling, cache partition: src/media/mediaKey.ts) with its encoder stage's model
 * and settings, which decide its rows. The Thinker's prefix cache and main's KV index name its positions by it and
 * their offset (src/sched/blockNames.ts writeMediaKey). Computed once per item.
 */
import { createHash } from 'node:crypto';
import { bytesKeyOf, saltedBytesKey } from '../media/mediaKey.ts';
import { modalities, modalityOf } from '../media/modalities/index.ts';
import { modelRoot } from '../sched/blockNames.ts';
import type { MediaItem } from './mediaPrompt.ts';

const keys = new WeakMap<MediaItem, string>();

/**
 * The item's block key, or undefined when its blocks are named by its rows (audio). A clip's audio track is
 * keyed as its clip is (its bytes are the clip's decoded samples): a second question about a clip heard with its
 * track reuses the KV of both without waiting for either's rows.
 */
export function blockKeyOf(item: MediaItem): string | undefined {
  if (!modalities[item.modality].keyedBlocks && item.trackOf === undefined) return undefined;
  let key = keys.get(item);
  if (key === undefined) {
    const body = modalityOf(item.part).body(item.part, item.index, item.what);
    const bytesKey = saltedBytesKey(bytesKeyOf(body), item.cacheSalt);
    const { model, encoder } = item.encoder;
    key = createHash('sha256')
      .update(JSON.stringify(['blocks', bytesKey, modelRoot(model), encoder ?? null]))
      .digest('base64url')
      .slice(0, 22);
    keys.set(item, key);
  }
  return key;
}
