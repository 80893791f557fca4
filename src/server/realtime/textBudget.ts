/**
 * The byte budget for the text of a realtime session's items, as Conversation keeps one for their media: without it
 * a client could store forty 8 MiB items (two sessions took main to 1.4 GB). Counted from the conversation as it is
 * now, so an item that leaves it (delete, truncation, an undecodable item) frees its text wherever that happens.
 */
import { ErrorCodes } from '../../common/errors.ts';
import { ClientInputError } from '../validate.ts';
import type { StoredItem, StoredPart } from './Conversation.ts';

/** Bytes of each part, counted once: a part's text never changes (an answer's text comes as a new part). */
const partBytes = new WeakMap<StoredPart, number>();

function bytesOfPart(part: StoredPart): number {
  let bytes = partBytes.get(part);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(part.text, 'utf8');
    partBytes.set(part, bytes);
  }
  return bytes;
}

export function itemTextBytes(item: StoredItem): number {
  let bytes = 0;
  for (const part of item.parts) bytes += bytesOfPart(part);
  return bytes;
}

/** Throws CHORUS_ERR_REQUEST_TOO_LARGE when `item` would take the conversation's text over `maxBytes`. */
export function checkTextBudget(items: readonly StoredItem[], item: StoredItem, maxBytes: number): void {
  let bytes = itemTextBytes(item);
  for (const it of items) bytes += itemTextBytes(it);
  if (bytes <= maxBytes) return;
  throw new ClientInputError(
    `the conversation's text would be ${bytes} bytes, over this session's ${maxBytes}: delete items it no longer ` +
      `needs (conversation.item.delete) or start a new session`,
    'item',
    ErrorCodes.REQUEST_TOO_LARGE,
  );
}
