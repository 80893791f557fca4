/**
 * The consumer's record of frames that ride in their bell (layout.ts ringsWithFrame): each such frame is seen twice,
 * once in its bell and once when the LPOP takes it off the list, in either order. The first sighting delivers it,
 * the second only forgets it, so the step thread gets every frame exactly once (the mailbox treats a second frame
 * under a key as a broken stream).
 *
 * Bounded: entries of a request go at its cleanup; a sighting whose twin never comes (the list expired or was
 * deleted first, a bell lost in an outage) stays until then, and beyond MAX_REQUESTS the oldest requests are dropped.
 */
const MAX_REQUESTS = 4096;

export class CarriedFrames {
  readonly #seen = new Map<string, Set<string>>(); // requestId -> `${from}\n${key}` seen once

  /** True on the first sighting of the frame (deliver it), false on the second (drop it). */
  firstSighting(requestId: string, from: string, key: string): boolean {
    const id = `${from}\n${key}`;
    const seen = this.#seen.get(requestId);
    if (seen?.delete(id)) {
      if (seen.size === 0) this.#seen.delete(requestId);
      return false;
    }
    if (seen) seen.add(id);
    else {
      this.#seen.set(requestId, new Set([id]));
      if (this.#seen.size > MAX_REQUESTS) this.#seen.delete(this.#seen.keys().next().value!);
    }
    return true;
  }

  forget(requestId: string): void {
    this.#seen.delete(requestId);
  }

  /** Requests with a frame seen once (tests). */
  get size(): number {
    return this.#seen.size;
  }
}
