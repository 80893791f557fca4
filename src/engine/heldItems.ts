/**
 * The media items a request's Thinker need not have encoded: those whose every position main knows to be in the
 * chosen instance's prefix cache (KvIndex, through the router: cachedPositions). Such an item is keyed (an image, a
 * clip, a clip's track: its positions are named by its block key, blockKey.ts), so a repeat of its prompt adopts their
 * KV and never reads its rows; encoding it would be work thrown away. The index can be stale (the cache evicted the
 * blocks since its last report, or a prediction was wrong): the Thinker then asks for the encode
 * (CHORUS_ERR_KV_NOT_HELD) and the request runs again with every item encoded (requests/Reencodes.ts). A held item
 * is not looked up in the encoder-output store either (no pin, no miss counted): its rows are not read.
 */
import { blockKeyOf } from './blockKey.ts';
import type { PreparedPrompt } from './mediaPrompt.ts';

export function heldItems(prompt: PreparedPrompt, cachedPositions: number): ReadonlySet<number> {
  const held = new Set<number>();
  if (cachedPositions === 0) return held;
  for (const item of prompt.items) {
    if (blockKeyOf(item) === undefined) continue;
    const spans = prompt.spans.filter((s) => s.item === item.index);
    if (spans.length > 0 && spans.every((s) => s.start + s.length <= cachedPositions)) held.add(item.index);
  }
  return held;
}
