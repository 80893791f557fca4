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

  it('keeps idle buffers up to its maximum, and lets the rest go', () => {
    const pool = new KvBufferPool(8192);
    const [x, y, z] = [pool.take(1000), pool.take(1000), pool.take(1000)];
    pool.give(x);
    pool.give(y);
    pool.give(z); // over the maximum: left to the garbage collector
    expect(pool.bytes).toBe(8192);
    expect(pool.take(1000).buffer).toBe(x.buffer); // the first kept of two alike
    expect(pool.take(1000).buffer).toBe(y.buffer);
    expect(pool.take(1000).buffer).not.toBe(z.buffer);
    // Memory it held at its peak stays for the next stores: a buffer grown to four pages comes back whole.
    const big = pool.take(4000);
    pool.give(big);
    expect(pool.bytes).toBe(0); // 16 KiB: over the maximum on its own
    const wide = new KvBufferPool(1 << 20);
    const grown = wide.take(4000);
    wide.give(grown);
    expect(wide.bytes).toBe(16_384);
    expect(wide.take(10).buffer.byteLength).toBe(16_384);
  });
});
