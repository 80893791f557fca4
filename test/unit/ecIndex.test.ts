/**
 * The EC store's index as a pure structure: the stored bytes stay within the budget (LRU among unpinned entries),
 * a pinned entry is never evicted nor expired, entries that do not fit are refused, TTL is sliding, byte forms
 * of one content share an entry, and every entry that leaves is reported for deletion.
 */
import { describe, expect, it } from 'vitest';
import { EcIndex, ecItemKey } from '../../src/engine/ec/EcIndex.ts';

const T0 = 1_000_000;
const ttlMs = 60_000;

function stored(ix: EcIndex, name: string, bytes: number, now = T0, holder: string | null = 'thinker#0'): boolean {
  return ix.store(ecItemKey('enc', `bytes-${name}`), `content-${name}`, bytes, { holder, remote: true }, now);
}

describe('EcIndex', () => {
  it('finds what was stored, by bytes key and encoder identity, and says where', () => {
    const ix = new EcIndex({ budgetBytes: 1000, ttlMs });
    expect(stored(ix, 'a', 100)).toBe(true);
    const w = ix.where(ecItemKey('enc', 'bytes-a'), T0);
    expect(w).toEqual({ contentKey: 'content-a', bytes: 100, localTo: new Set(['thinker#0']), remote: true });
    // Another encoder identity never sees it.
    expect(ix.where(ecItemKey('other-enc', 'bytes-a'), T0)).toBeNull();
    // A second holder of the same content (another byte form of it) joins the entry; bytes are counted once.
    ix.store(ecItemKey('enc', 'bytes-a2'), 'content-a', 100, { holder: 'thinker#1', remote: true }, T0);
    expect(ix.where(ecItemKey('enc', 'bytes-a2'), T0)?.localTo).toEqual(new Set(['thinker#0', 'thinker#1']));
    expect(ix.stats).toMatchObject({ entries: 1, bytes: 100 });
  });

  it('stays within the budget, least recently used first', () => {
    const ix = new EcIndex({ budgetBytes: 300, ttlMs });
    stored(ix, 'a', 100, T0);
    stored(ix, 'b', 100, T0 + 1);
    stored(ix, 'c', 100, T0 + 2);
    // a is used (a request takes it and ends): b is now the least recently used.
    expect(ix.acquire(ecItemKey('enc', 'bytes-a'), 'r1', T0 + 3)).not.toBeNull();
    ix.release('r1', T0 + 4);
    stored(ix, 'd', 150, T0 + 5);
    expect(ix.where(ecItemKey('enc', 'bytes-b'), T0 + 5)).toBeNull();
    expect(ix.where(ecItemKey('enc', 'bytes-c'), T0 + 5)).toBeNull(); // 150 more needed two evictions
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 5)).not.toBeNull();
    expect(ix.stats.bytes).toBeLessThanOrEqual(300);
    expect(ix.stats).toMatchObject({ bytes: 250, evictions: 2 });
    expect(ix.drainDropped().map((d) => [d.contentKey, d.why])).toEqual([
      ['content-b', 'evicted'],
      ['content-c', 'evicted'],
    ]);
  });

  it('never evicts a pinned entry; refuses what does not fit beside it', () => {
    const ix = new EcIndex({ budgetBytes: 300, ttlMs });
    stored(ix, 'a', 200);
    expect(ix.acquire(ecItemKey('enc', 'bytes-a'), 'r1', T0)).not.toBeNull();
    expect(stored(ix, 'b', 200, T0 + 1)).toBe(false);
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 1)).not.toBeNull();
    expect(ix.drainDropped()).toEqual([
      { contentKey: 'content-b', holders: ['thinker#0'], remote: true, why: 'refused' },
    ]);
    expect(ix.stats).toMatchObject({ bytes: 200, pinnedBytes: 200, refused: 1, evictions: 0 });
    // Pinned past its TTL: still there while the request runs.
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 10 * ttlMs)).not.toBeNull();
    ix.release('r1', T0 + 10 * ttlMs);
    // Unpinned, it is the least recently used: the next entry that needs room evicts it.
    expect(stored(ix, 'b', 200, T0 + 10 * ttlMs + 1)).toBe(true);
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 10 * ttlMs + 1)).toBeNull();
  });

  it('two requests pin one entry: it stays until both ended', () => {
    const ix = new EcIndex({ budgetBytes: 200, ttlMs });
    stored(ix, 'a', 200);
    ix.acquire(ecItemKey('enc', 'bytes-a'), 'r1', T0);
    ix.acquire(ecItemKey('enc', 'bytes-a'), 'r2', T0);
    ix.release('r1', T0);
    expect(stored(ix, 'b', 100, T0)).toBe(false);
    ix.release('r2', T0);
    expect(stored(ix, 'b', 100, T0)).toBe(true);
    expect(ix.stats).toMatchObject({ entries: 1, bytes: 100 });
  });

  it('expires unused entries after the TTL, renewed by each use', () => {
    const ix = new EcIndex({ budgetBytes: 1000, ttlMs });
    stored(ix, 'a', 100, T0);
    stored(ix, 'b', 100, T0);
    ix.acquire(ecItemKey('enc', 'bytes-a'), 'r1', T0 + ttlMs - 1);
    ix.release('r1', T0 + ttlMs - 1);
    ix.expire(T0 + ttlMs);
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + ttlMs)).not.toBeNull();
    expect(ix.where(ecItemKey('enc', 'bytes-b'), T0 + ttlMs)).toBeNull();
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 2 * ttlMs)).toBeNull();
    expect(ix.stats).toMatchObject({ entries: 0, bytes: 0, expirations: 2 });
    expect(ix.drainDropped().every((d) => d.why === 'expired')).toBe(true);
  });

  it('a release does not extend the expiry the use set (Redis renewed the key at the use, not at the release)', () => {
    const ix = new EcIndex({ budgetBytes: 1000, ttlMs });
    stored(ix, 'a', 100, T0);
    ix.acquire(ecItemKey('enc', 'bytes-a'), 'r1', T0 + 10);
    ix.release('r1', T0 + 10 + ttlMs - 1);
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 10 + ttlMs - 1)).not.toBeNull();
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0 + 10 + ttlMs)).toBeNull();
  });

  it('forgets a dead holder: an entry without Redis and without holders is gone', () => {
    const ix = new EcIndex({ budgetBytes: 1000, ttlMs });
    ix.store(ecItemKey('enc', 'bytes-a'), 'content-a', 100, { holder: 'thinker#0', remote: false }, T0);
    ix.store(ecItemKey('enc', 'bytes-b'), 'content-b', 100, { holder: 'thinker#0', remote: true }, T0);
    ix.forgetHolder('thinker#0');
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0)).toBeNull();
    expect(ix.where(ecItemKey('enc', 'bytes-b'), T0)).toEqual({
      contentKey: 'content-b',
      bytes: 100,
      localTo: new Set(),
      remote: true,
    });
    expect(ix.contentKeys()).toEqual(['content-b']);
  });

  it('an entry bigger than the whole budget is refused, nothing else is evicted for it', () => {
    const ix = new EcIndex({ budgetBytes: 100, ttlMs });
    stored(ix, 'a', 50);
    expect(stored(ix, 'big', 101)).toBe(false);
    expect(ix.where(ecItemKey('enc', 'bytes-a'), T0)).not.toBeNull();
    expect(ix.stats).toMatchObject({ bytes: 50, evictions: 0, refused: 1 });
  });
});
