/** A request's media items as the EC store sees them: looked up by the hash of their bytes as received. */
import type { MediaModality } from '../../common/encoderSettings.ts';
import { bytesKeyOf, saltedBytesKey } from '../../media/mediaKey.ts';
import type { EcItemPlan } from '../../worker/messages.ts';
import { mediaBodyOf } from '../MediaRoutes.ts';
import type { MediaItem, PreparedPrompt } from '../mediaPrompt.ts';
import type { EcEntry } from '../routing/chooseRoute.ts';
import type { EcItemQuery, EcStore } from './EcStore.ts';

/** Items' bytes keys, computed once per item (routing and the store's plan both ask). */
const bytesKeys = new WeakMap<MediaItem, string>();

/**
 * The hash of an item's bytes as received (sha256: ~1 ms per MB on main, once per item), within the request's cache
 * partition: the same bytes under another salt are another entry, so a tenant never takes (nor learns of) another's.
 */
function bytesKeyOfItem(item: MediaItem): string {
  let key = bytesKeys.get(item);
  if (key === undefined) {
    const bytesKey = bytesKeyOf(mediaBodyOf(item));
    bytesKeys.set(item, (key = saltedBytesKey(bytesKey, item.cacheSalt)));
  }
  return key;
}

/** Each item's store query. */
export function ecQueriesOf(prompt: PreparedPrompt): EcItemQuery[] {
  return prompt.items.map((item) => ({
    index: item.index,
    bytesKey: bytesKeyOfItem(item),
    encoderStageId: item.encoder.stageId,
  }));
}

/** The item's entry had no rows when its Thinker came to take them: forget it (the item is encoded again). */
export function forgetLostItem(ec: EcStore | null, item: MediaItem): void {
  ec?.forgetLost(bytesKeyOfItem(item), item.encoder.stageId);
}

/** What the router needs to know of an item in the store (a read: no pin, no use); null on a miss. */
export function ecEntryOf(ec: EcStore | null, item: MediaItem): EcEntry | null {
  const where = ec?.where(bytesKeyOfItem(item), item.encoder.stageId);
  return where ? { localTo: [...where.localTo], remote: where.remote } : null;
}

/**
 * The store's plan for the request's items on its Thinker instance, but those `held` (their rows are not read:
 * heldItems.ts); undefined without a store or media.
 */
export function planEcItems(
  ec: EcStore | null,
  requestId: string,
  prompt: PreparedPrompt,
  thinker: string,
  held: ReadonlySet<number> = new Set(),
): ReadonlyMap<number, EcItemPlan> | undefined {
  if (!ec || prompt.items.length === 0) return undefined;
  return ec.plan(
    requestId,
    ecQueriesOf(prompt).filter((q) => !held.has(q.index)),
    thinker,
  );
}

/** The modalities some encoder still has to encode (items the store has, or the Thinker's KV holds, need none). */
export function modalitiesToEncode(
  prompt: PreparedPrompt,
  ec: ReadonlyMap<number, EcItemPlan> | undefined,
  held: ReadonlySet<number> = new Set(),
): MediaModality[] {
  const encoded = prompt.items.filter((i) => ec?.get(i.index)?.contentKey === undefined && !held.has(i.index));
  return [...new Set(encoded.map((i) => i.modality))];
}
