/**
 * KvBufferPool (stages/models/KvBufferPool.ts): buffers come back to the next store that fits them, grow in place,
 * and stay within the pool's bounds.
 */
import { describe, expect, it } from 'vitest';
import { KvBufferPool, RESERVE_BYTES } from '../../stages/models/KvBufferPool.ts';

describe('KvBufferPool', () => {
  it('hands a returned buffer out again, from byte 0, the smallest that fits before growing one', () => {
    const pool = new KvBufferPool(1 << 20);
    const a = pool.take(1000); // 4000 bytes: one page
    expect(a.length).toBe(1000);
    expect(a.buffer.byteLength).toBe(4096);
    expect((a.buffer as ArrayBuffer).maxByteLength).toBe(RESERVE_BYTES);
    const big = pool.take(3000); // three pages
    pool.give(a);
    pool.give(big);
    expect(pool.bytes).toBe(4096 + 12_288);
    const b = pool.take(600); // both fit: the smaller
    expect(b.buffer).toBe(a.buffer);
    expect([b.byteOffset, b.length]).toEqual([0, 600]);
    expect(pool.bytes).toBe(12_288);
    // Neither idle one fits: the largest (pages it had are kept) grows to it, not a new buffer.
    pool.give(b);
    const c = pool.take(5000);
    expect(c.buffer).toBe(big.buffer);
    expect(c.buffer.byteLength).toBe(20_480);
  });

  it('grows a buffer in place, keeping what it holds', () => {
    const pool = new KvBufferPool(1 << 20);
    const a = pool.take(1000);
    a.fill(7);
    const grown = pool.grow(a, 100_000)!;
    expect(grown.buffer).toBe(a.buffer);
    expect(grown.length).toBe(100_000);
    expect(grown.subarray(0, 1000).every((x) => x === 7)).toBe(true);
    expect(grown[1000]).toBe(0); // fresh pages are zero
    expect(pool.grow(new Float32Array(16), 32)).toBeNull(); // not a pool buffer: the caller copies
    expect(pool.grow(grown, RESERVE_BYTES / 4 + 1)).toBeNull(); // past the reservation
  });

  it('keeps no more idle than it ever had in use at once, nor more than its maximum', () => {
    const pool = new KvBufferPool(1 << 20);
    const first = pool.take(1000);
    pool.give(first);
    const [x, y] = [pool.take(1000), pool.take(1000)]; // 8 KiB in use at the peak
    pool.give(x);
    pool.give(y);
    expect(pool.bytes).toBe(8192);
    const big = pool.take(4000);
    expect(pool.bytes).toBe(4096); // one idle page grown to four
    pool.give(big); // 16 KiB back beside 4 KiB idle would make 20, over the 16 KiB peak: let go
    expect(pool.bytes).toBe(4096);
    const small = new KvBufferPool(4096);
    const [p, q] = [small.take(1000), small.take(1000)];
    small.give(p);
    small.give(q); // over the maximum: left to the garbage collector
    expect(small.bytes).toBe(4096);
    expect(small.take(1000).buffer).toBe(p.buffer);
    expect(small.take(1000).buffer).not.toBe(q.buffer);
  });
});
