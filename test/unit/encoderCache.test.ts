/**
 * EncoderCache: hits skip the encoder, refcounts pin, unpinned entries wait in an LRU, eviction never drops a pinned
 * entry.
 */
import { describe, expect, it } from 'vitest';
import { EncoderCache } from '../../stages/encoder/EncoderCache.ts';
import { audioCacheKey } from '../../src/media/mediaKey.ts';

const ROW_BYTES = 4 * 4; // rows of 4 floats

function rows(n: number, fill: number): Float32Array {
  return new Float32Array(n * 4).fill(fill);
}

/** acquire + complete: what a request does on a miss. */
function encodeInto(cache: EncoderCache, key: string, requestId: string, n: number): Float32Array {
  const lookup = cache.acquire(key, requestId, n * ROW_BYTES);
  expect(lookup.status).toBe('miss');
  const out = rows(n, key.length);
  expect(cache.complete(key, out)).toEqual([requestId]);
  return out;
}

describe('EncoderCache', () => {
  it('a second request for the same media is a hit and gets the same rows', () => {
    const cache = new EncoderCache(1000);
    const encoded = encodeInto(cache, 'img-a', 'r1', 4);
    const again = cache.acquire('img-a', 'r2', 4 * ROW_BYTES);
    expect(again).toEqual({ status: 'hit', embeddings: encoded });
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1, evictions: 0, bytes: 4 * ROW_BYTES, entries: 1 });
  });

  it('a request arriving while the same media encodes joins the pending entry', () => {
    const cache = new EncoderCache(1000);
    expect(cache.acquire('k', 'r1', 2 * ROW_BYTES).status).toBe('miss');
    expect(cache.acquire('k', 'r2', 2 * ROW_BYTES).status).toBe('pending');
    expect(cache.get('k')).toBeNull();
    expect(cache.complete('k', rows(2, 1)).sort()).toEqual(['r1', 'r2']);
    expect(cache.get('k')).toEqual(rows(2, 1));
    expect(cache.stats).toMatchObject({ hits: 1, misses: 1 });
  });

  it('a failed encode drops the entry and names the waiting requests; the next lookup misses', () => {
    const cache = new EncoderCache(1000);
    cache.acquire('k', 'r1', ROW_BYTES);
    cache.acquire('k', 'r2', ROW_BYTES);
    expect(cache.fail('k').sort()).toEqual(['r1', 'r2']);
    expect(cache.stats.bytes).toBe(0);
    expect(cache.acquire('k', 'r3', ROW_BYTES).status).toBe('miss');
  });

  it('keeps released entries until the budget needs the room, evicting least recently released first', () => {
    const cache = new EncoderCache(10 * ROW_BYTES);
    encodeInto(cache, 'a', 'r1', 4);
    encodeInto(cache, 'b', 'r2', 4);
    cache.release('a', 'r1');
    cache.release('b', 'r2');
    expect(cache.stats).toMatchObject({ entries: 2, pinnedBytes: 0, evictions: 0 });
    // Rescue 'a' (a hit pins it again), release it: now 'b' is the least recently released.
    expect(cache.acquire('a', 'r3', 4 * ROW_BYTES).status).toBe('hit');
    cache.release('a', 'r3');
    encodeInto(cache, 'c', 'r4', 4); // needs 4 rows of room: evicts 'b' only
    expect(cache.has('a')).toBe(true);
    expect(cache.has('b')).toBe(false);
    expect(cache.drainEvicted()).toEqual(['b']);
    expect(cache.drainEvicted()).toEqual([]);
    expect(cache.stats).toMatchObject({ evictions: 1, bytes: 8 * ROW_BYTES });
  });

  it('never evicts an entry a running request references; runs over budget temporarily instead', () => {
    const cache = new EncoderCache(8 * ROW_BYTES);
    const a = encodeInto(cache, 'a', 'r1', 6); // r1 is running: 'a' is pinned
    expect(cache.canAllocate(4 * ROW_BYTES)).toBe(false);
    encodeInto(cache, 'b', 'r2', 4); // cannot fit without dropping 'a': granted over budget
    expect(cache.has('a')).toBe(true);
    expect(cache.get('a')).toBe(a);
    expect(cache.stats).toMatchObject({
      bytes: 10 * ROW_BYTES,
      pinnedBytes: 10 * ROW_BYTES,
      evictions: 0,
      overBudgetReservations: 1,
    });
    // Many more pinned inserts: still nothing pinned is dropped.
    for (let i = 0; i < 5; i++) encodeInto(cache, `x${i}`, `rx${i}`, 2);
    expect(cache.stats.evictions).toBe(0);
    expect(['a', 'b', 'x0', 'x4'].every((k) => cache.has(k))).toBe(true);
    // As requests finish, the cache trims back under its budget, oldest released first.
    cache.releaseRequest('r1');
    expect(cache.has('a')).toBe(false);
    for (let i = 0; i < 5; i++) cache.releaseRequest(`rx${i}`);
    cache.releaseRequest('r2');
    expect(cache.stats.bytes).toBeLessThanOrEqual(8 * ROW_BYTES);
    expect(cache.stats.pinnedBytes).toBe(0);
  });

  it('an entry stays pinned until its last holder releases it; release is idempotent', () => {
    const cache = new EncoderCache(4 * ROW_BYTES);
    encodeInto(cache, 'a', 'r1', 4);
    cache.acquire('a', 'r2', 4 * ROW_BYTES);
    cache.release('a', 'r1');
    cache.release('a', 'r1');
    encodeInto(cache, 'b', 'r3', 4); // 'a' is still held by r2
    expect(cache.has('a')).toBe(true);
    cache.release('a', 'r2'); // now unpinned, and the cache is over budget: trimmed at once
    expect(cache.has('a')).toBe(false);
    expect(cache.stats).toMatchObject({ bytes: 4 * ROW_BYTES, evictions: 1 });
  });

  it('an encode whose requests all went away is cached unpinned when it completes', () => {
    const cache = new EncoderCache(100 * ROW_BYTES);
    cache.acquire('a', 'r1', 4 * ROW_BYTES);
    cache.releaseRequest('r1'); // aborted while encoding
    expect(cache.complete('a', rows(4, 2))).toEqual([]);
    expect(cache.stats.pinnedBytes).toBe(0);
    expect(cache.acquire('a', 'r2', 4 * ROW_BYTES).status).toBe('hit');
  });

  it('keys differ by content, encoder identity and length', () => {
    const samples = Float32Array.from({ length: 1600 }, (_, i) => Math.sin(i));
    const key = audioCacheKey(samples, 'audio_encoder-1');
    expect(audioCacheKey(samples.slice(), 'audio_encoder-1')).toBe(key);
    expect(audioCacheKey(samples, 'audio_encoder-2')).not.toBe(key);
    const changed = samples.slice();
    changed[800] += 1e-6;
    expect(audioCacheKey(changed, 'audio_encoder-1')).not.toBe(key);
    expect(audioCacheKey(samples.subarray(0, 1599), 'audio_encoder-1')).not.toBe(key);
  });
});
