/**
 * The encoder-output (EC) store's index, as main keeps it: which media (by the bytes as received and the encoder
 * that would encode them) has rows stored, under which content key, how big, where (which Thinker instances hold a
 * copy in-process, and whether Redis has one). Pure: no I/O, no timers; time comes in as `nowMs`.
 *
 * Eviction policy (what must stay true):
 * - The stored bytes (each content key counted once, however many byte forms and holders map to it) stay within
 *   `budgetBytes`, except for pinned entries: a request pins the entries it was told to take (acquire) until it
 *   ends (release), and a pinned entry is never evicted nor expired, since its rows may still be in flight.
 * - To make room, unpinned entries go least recently used first (use = stored, or acquired by a request).
 * - An entry that does not fit once every unpinned entry is gone is refused (not stored): the request that made
 *   it has its rows already; the next one with the same media encodes again.
 * - TTL: an unpinned entry not used for `ttlMs` expires (sliding: each use renews it; a use is a store or an
 *   acquire). Redis keys carry the same TTL, renewed by main at each acquire, so Redis drops what main forgot even
 *   if main died; the caller gives the index a slightly shorter TTL than Redis so that it never claims a key that
 *   Redis has just expired.
 * Every entry that leaves is reported (drainDropped) so the caller deletes its Redis key and tells its holders.
 */

export interface EcIndexOptions {
  readonly budgetBytes: number;
  readonly ttlMs: number;
}

/** Where a media item's rows are (EcStore.where). */
export interface EcWhere {
  readonly contentKey: string;
  readonly bytes: number;
  /** Thinker instances holding the rows in-process (a hit there needs no I/O at all). */
  readonly localTo: ReadonlySet<string>;
  /** In Redis under the content key: any Thinker instance can take them (one GET). */
  readonly remote: boolean;
}

/** An entry that left the index: delete it from Redis (when remote) and from each holder's memory. */
export interface EcDropped {
  readonly contentKey: string;
  readonly holders: readonly string[];
  readonly remote: boolean;
  readonly why: 'evicted' | 'expired' | 'refused' | 'lost';
}

export interface EcIndexStats {
  readonly entries: number;
  readonly bytes: number;
  readonly pinnedBytes: number;
  readonly evictions: number;
  readonly expirations: number;
  readonly refused: number;
}

interface Entry {
  readonly contentKey: string;
  readonly bytes: number;
  readonly itemKeys: Set<string>;
  readonly holders: Set<string>;
  remote: boolean;
  readonly pinnedBy: Set<string>;
  expiresAtMs: number;
}

export class EcIndex {
  readonly #byItem = new Map<string, Entry>();
  readonly #byContent = new Map<string, Entry>();
  /** Unpinned entries, least recently used first (a Map keeps insertion order). */
  readonly #lru = new Map<string, Entry>();
  readonly #byRequest = new Map<string, Set<Entry>>();
  #dropped: EcDropped[] = [];
  #bytes = 0;
  #counters = { evictions: 0, expirations: 0, refused: 0 };

  constructor(readonly options: EcIndexOptions) {
    if (!(options.budgetBytes >= 0)) throw new RangeError(`EC budget must be >= 0 bytes, got ${options.budgetBytes}`);
    if (!(options.ttlMs > 0)) throw new RangeError(`EC ttl must be > 0 ms, got ${options.ttlMs}`);
  }

  /** Where the item's rows are, or null; a pure read (no pin, no use). */
  where(itemKey: string, nowMs: number): EcWhere | null {
    const e = this.#byItem.get(itemKey);
    return e && this.#alive(e, nowMs) ? view(e) : null;
  }

  /**
   * A request will take the item's rows from the store: pins the entry for it (until release) and counts a use.
   * Null when the store does not have them (the caller encodes).
   */
  acquire(itemKey: string, requestId: string, nowMs: number): EcWhere | null {
    const e = this.#byItem.get(itemKey);
    if (!e || !this.#alive(e, nowMs)) return null;
    e.pinnedBy.add(requestId);
    this.#lru.delete(e.contentKey);
    e.expiresAtMs = nowMs + this.options.ttlMs;
    let pins = this.#byRequest.get(requestId);
    if (!pins) this.#byRequest.set(requestId, (pins = new Set()));
    pins.add(e);
    return view(e);
  }

  /** The request ended: its pins go; entries nobody pins are evictable again (most recently used). Idempotent. */
  release(requestId: string, nowMs: number): void {
    for (const e of this.#byRequest.get(requestId) ?? []) {
      e.pinnedBy.delete(requestId);
      if (e.pinnedBy.size > 0 || this.#byContent.get(e.contentKey) !== e) continue;
      // Its expiry stays where the use set it: the Redis key's TTL was renewed then too, and must not run out
      // before the index's does.
      this.#lru.set(e.contentKey, e);
    }
    this.#byRequest.delete(requestId);
    this.#makeRoom(0, nowMs);
  }

  /**
   * Rows for `contentKey` (the encoder's key for the decoded media) are now held by `holder` (a Thinker instance;
   * null: none) and, with `remote`, in Redis; `itemKey` (bytes as received + encoder identity) maps to them.
   * Returns false when the entry was refused (it does not fit the budget): see drainDropped.
   */
  store(
    itemKey: string,
    contentKey: string,
    bytes: number,
    where: { readonly holder: string | null; readonly remote: boolean },
    nowMs: number,
  ): boolean {
    this.expire(nowMs);
    const known = this.#byContent.get(contentKey);
    if (known) {
      this.#map(itemKey, known);
      if (where.holder !== null) known.holders.add(where.holder);
      known.remote ||= where.remote;
      known.expiresAtMs = nowMs + this.options.ttlMs;
      if (known.pinnedBy.size === 0) this.#touch(known);
      return true;
    }
    const holders = where.holder === null ? [] : [where.holder];
    // Evict only for an entry that will fit then: refusing after evicting would lose entries for nothing.
    let evictable = 0;
    for (const e of this.#lru.values()) evictable += e.bytes;
    if (this.#bytes - evictable + bytes > this.options.budgetBytes) {
      this.#counters.refused++;
      this.#dropped.push({ contentKey, holders, remote: where.remote, why: 'refused' });
      return false;
    }
    this.#makeRoom(bytes, nowMs);
    const e: Entry = {
      contentKey,
      bytes,
      itemKeys: new Set(),
      holders: new Set(holders),
      remote: where.remote,
      pinnedBy: new Set(),
      expiresAtMs: nowMs + this.options.ttlMs,
    };
    this.#byContent.set(contentKey, e);
    this.#map(itemKey, e);
    this.#bytes += bytes;
    this.#lru.set(contentKey, e);
    return true;
  }

  /** Drops unpinned entries whose TTL has passed. */
  expire(nowMs: number): void {
    for (const e of [...this.#lru.values()]) {
      if (e.expiresAtMs > nowMs) continue;
      this.#counters.expirations++;
      this.#drop(e, 'expired');
    }
  }

  /** A Thinker instance is gone (died, restarted, lost): its in-process copies went with it. */
  forgetHolder(instance: string): void {
    for (const e of [...this.#byContent.values()]) {
      if (!e.holders.delete(instance) || e.remote || e.holders.size > 0) continue;
      // Nowhere left to take the rows from: the entry is gone, pinned or not (a pinned request's Thinker is the
      // one that died, and its requests failed with it).
      this.#drop(e, 'evicted');
    }
  }

  /**
   * A Thinker found nothing under the item's entry (Redis evicted it, its holder went away): the entry is gone, pinned
   * or not, so the item's next lookup misses and it is encoded again. True when there was an entry.
   */
  forget(itemKey: string): boolean {
    const e = this.#byItem.get(itemKey);
    if (!e) return false;
    this.#drop(e, 'lost');
    return true;
  }

  /** Entries that left the index since the last call. */
  drainDropped(): EcDropped[] {
    const out = this.#dropped;
    this.#dropped = [];
    return out;
  }

  /** Every entry still indexed (for shutdown: delete them all). */
  contentKeys(): string[] {
    return [...this.#byContent.keys()];
  }

  get stats(): EcIndexStats {
    let pinnedBytes = 0;
    for (const e of this.#byContent.values()) if (e.pinnedBy.size > 0) pinnedBytes += e.bytes;
    return { entries: this.#byContent.size, bytes: this.#bytes, pinnedBytes, ...this.#counters };
  }

  #alive(e: Entry, nowMs: number): boolean {
    if (e.pinnedBy.size > 0 || e.expiresAtMs > nowMs) return true;
    this.#counters.expirations++;
    this.#drop(e, 'expired');
    return false;
  }

  #map(itemKey: string, e: Entry): void {
    const before = this.#byItem.get(itemKey);
    if (before && before !== e) before.itemKeys.delete(itemKey);
    this.#byItem.set(itemKey, e);
    e.itemKeys.add(itemKey);
  }

  #touch(e: Entry): void {
    this.#lru.delete(e.contentKey);
    this.#lru.set(e.contentKey, e);
  }

  /** Evicts least recently used unpinned entries until `bytes` more fit, or none is left. */
  #makeRoom(bytes: number, nowMs: number): void {
    this.expire(nowMs);
    for (const e of [...this.#lru.values()]) {
      if (this.#bytes + bytes <= this.options.budgetBytes) return;
      this.#counters.evictions++;
      this.#drop(e, 'evicted');
    }
  }

  #drop(e: Entry, why: EcDropped['why']): void {
    this.#byContent.delete(e.contentKey);
    this.#lru.delete(e.contentKey);
    for (const k of e.itemKeys) if (this.#byItem.get(k) === e) this.#byItem.delete(k);
    for (const requestId of e.pinnedBy) this.#byRequest.get(requestId)?.delete(e);
    this.#bytes -= e.bytes;
    this.#dropped.push({ contentKey: e.contentKey, holders: [...e.holders], remote: e.remote, why });
  }
}

function view(e: Entry): EcWhere {
  return { contentKey: e.contentKey, bytes: e.bytes, localTo: new Set(e.holders), remote: e.remote };
}

/** The index key of a media item: the bytes as received (bytesKeyOf) and the identity of the encoder for them. */
export function ecItemKey(encoderIdentity: string, bytesKey: string): string {
  return `${encoderIdentity}:${bytesKey}`;
}
