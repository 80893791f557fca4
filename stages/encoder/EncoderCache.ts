/**
 * The encoder output cache (vLLM's EncoderCacheManager): encoder rows keyed by media content hash + encoder
 * identity (src/media/mediaKey.ts), so the same media is encoded once while it stays cached. Pure:
 * no I/O, no timers.
 *
 * Lifecycle of an entry:
 * - acquire() on a miss reserves a pending entry for the request (its bytes are counted at once, known
 *   from the embedding count), and the caller runs the encoder, then complete() or fail(). A second request
 *   for the same key while it is pending joins it ('pending') instead of encoding it again.
 * - An entry is pinned while any request holds it (acquire .. release). Eviction never touches it.
 * - When the last holder releases it, a ready entry is not freed: it moves to the LRU of unpinned entries
 *   and stays until its bytes are needed (lazy eviction); acquire() rescues it from there.
 *
 * Over budget: when pinned entries alone exceed the byte budget, a new reservation is still granted and
 * the cache runs over budget temporarily (counted in stats.overBudgetReservations). Refusing would not save
 * memory: the request needs those rows anyway, and pinned rows can only be freed by finishing requests.
 * Every release then trims unpinned entries back under the budget. Callers that must not run over check
 * canAllocate() before starting an encode and defer the item instead (the scheduler clamps at it).
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

export interface EncoderCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly evictions: number;
  /** Bytes held now: ready rows plus pending reservations. */
  readonly bytes: number;
  /** Of which pinned by running requests (or pending). */
  readonly pinnedBytes: number;
  readonly entries: number;
  readonly overBudgetReservations: number;
}

export type CacheLookup =
  | { readonly status: 'hit'; readonly embeddings: Float32Array }
  /** Another request's encode of the same media is in flight: wait for complete() (or fail()). */
  | { readonly status: 'pending' }
  /** Reserved for this request: run the encoder, then complete() or fail(). */
  | { readonly status: 'miss' };

interface Entry {
  embeddings: Float32Array | null; // null while pending
  bytes: number;
  readonly holders: Set<string>;
}

export class EncoderCache {
  private readonly entries = new Map<string, Entry>();
  /** Ready, unpinned entries, least recently released first (Map keeps insertion order). */
  private readonly lru = new Map<string, true>();
  private readonly byRequest = new Map<string, Set<string>>();
  private evictedKeys: string[] = [];
  private counters = { hits: 0, misses: 0, evictions: 0, bytes: 0, overBudgetReservations: 0 };

  constructor(readonly budgetBytes: number) {
    if (!(budgetBytes >= 0)) throw new RangeError(`encoder cache budget must be >= 0 bytes, got ${budgetBytes}`);
  }

  /** Looks key up for requestId, pinning it for the request; a miss reserves `bytes` for the coming rows. */
  acquire(key: string, requestId: string, bytes: number): CacheLookup {
    const found = this.entries.get(key);
    if (found) {
      this.counters.hits++;
      this.hold(key, found, requestId);
      return found.embeddings ? { status: 'hit', embeddings: found.embeddings } : { status: 'pending' };
    }
    this.counters.misses++;
    this.makeRoom(bytes);
    if (this.counters.bytes + bytes > this.budgetBytes) this.counters.overBudgetReservations++;
    const entry: Entry = { embeddings: null, bytes, holders: new Set() };
    this.entries.set(key, entry);
    this.counters.bytes += bytes;
    this.hold(key, entry, requestId);
    return { status: 'miss' };
  }

  /** The encoder's rows for a pending key; returns the requests holding it (all waiting for these rows). */
  complete(key: string, embeddings: Float32Array): string[] {
    const entry = this.entries.get(key);
    if (!entry || entry.embeddings)
      throw new ChorusError(
        ErrorCodes.INTERNAL,
        `encoder cache: complete(${key}) without a pending reservation (acquire() returned 'miss' for it?)`,
      );
    entry.embeddings = embeddings;
    this.counters.bytes += embeddings.byteLength - entry.bytes; // the reservation was an estimate
    entry.bytes = embeddings.byteLength;
    if (entry.holders.size === 0) this.lru.set(key, true); // every requester went away while it encoded
    this.trim();
    return [...entry.holders];
  }

  /** The encode failed: the entry is dropped; returns the requests that were waiting for it. */
  fail(key: string): string[] {
    const entry = this.entries.get(key);
    if (!entry || entry.embeddings) return [];
    const holders = [...entry.holders];
    for (const requestId of holders) this.byRequest.get(requestId)?.delete(key);
    this.drop(key, entry);
    return holders;
  }

  /** The request no longer needs the rows (they are in its KV cache, or it ended). Idempotent. */
  release(key: string, requestId: string): void {
    const entry = this.entries.get(key);
    if (!entry || !entry.holders.delete(requestId)) return;
    this.byRequest.get(requestId)?.delete(key);
    if (entry.holders.size === 0 && entry.embeddings) this.lru.set(key, true);
    this.trim();
  }

  /** Releases everything a request holds (finish, abort, failure). */
  releaseRequest(requestId: string): void {
    for (const key of [...(this.byRequest.get(requestId) ?? [])]) this.release(key, requestId);
    this.byRequest.delete(requestId);
  }

  /** Ready rows without counting a hit or pinning (for a holder that was told 'pending'). */
  get(key: string): Float32Array | null {
    return this.entries.get(key)?.embeddings ?? null;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Whether `bytes` more fit under the budget, counting what evicting unpinned entries would free. */
  canAllocate(bytes: number): boolean {
    let unpinned = 0;
    for (const key of this.lru.keys()) unpinned += this.entries.get(key)!.bytes;
    return this.counters.bytes - unpinned + bytes <= this.budgetBytes;
  }

  /** Keys evicted since the last call (vLLM's freed list: whoever mirrors the rows drops these). */
  drainEvicted(): string[] {
    const out = this.evictedKeys;
    this.evictedKeys = [];
    return out;
  }

  get stats(): EncoderCacheStats {
    let pinnedBytes = this.counters.bytes;
    for (const key of this.lru.keys()) pinnedBytes -= this.entries.get(key)!.bytes;
    const { hits, misses, evictions, bytes, overBudgetReservations } = this.counters;
    return { hits, misses, evictions, bytes, pinnedBytes, entries: this.entries.size, overBudgetReservations };
  }

  private hold(key: string, entry: Entry, requestId: string): void {
    entry.holders.add(requestId);
    this.lru.delete(key); // pinned again (a rescue when it was unpinned)
    let keys = this.byRequest.get(requestId);
    if (!keys) this.byRequest.set(requestId, (keys = new Set()));
    keys.add(key);
  }

  /** Evicts least-recently-released unpinned entries until `bytes` more fit, or none is left. */
  private makeRoom(bytes: number): void {
    for (const key of this.lru.keys()) {
      if (this.counters.bytes + bytes <= this.budgetBytes) return;
      this.counters.evictions++;
      this.evictedKeys.push(key);
      this.drop(key, this.entries.get(key)!);
    }
  }

  private trim(): void {
    this.makeRoom(0);
  }

  private drop(key: string, entry: Entry): void {
    this.entries.delete(key);
    this.lru.delete(key);
    this.counters.bytes -= entry.bytes;
  }
}
