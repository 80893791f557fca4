/** KvBufferPool: exact views over block-rounded buffers, handed back only once no cache holds them, bounded. */
import { describe, expect, it } from 'vitest';
import { KvBufferPool } from '../../stages/models/KvBufferPool.ts';

describe('KvBufferPool', () => {
  it('lends exact views over buffers rounded up to 64 positions, and reuses what no cache holds', () => {
    const pool = new KvBufferPool(4);
    const a = pool.take(2, 4, 10, 8); // [2, 4, 10, 8]
    expect(a.length).toBe(2 * 4 * 10 * 8);
    expect(a.buffer.byteLength).toBe(2 * 4 * 64 * 8 * 4);
    const b = pool.take(2, 4, 11, 8);
    expect(b.buffer).not.toBe(a.buffer);
    expect(pool.allocations).toBe(2);
    // a is still held by a cache: not reused.
    pool.reclaim(new Set([a.buffer, b.buffer]));
    const c = pool.take(2, 4, 12, 8);
    expect([a.buffer, b.buffer]).not.toContain(c.buffer);
    // The step moved on: a is free again and serves the next step, one position longer.
    pool.reclaim(new Set([b.buffer, c.buffer]));
    const d = pool.take(2, 4, 13, 8);
    expect(d.buffer).toBe(a.buffer);
    expect(d.length).toBe(2 * 4 * 13 * 8);
    expect(pool.allocations).toBe(3);
  });

  it('takes the smallest free buffer that fits, allocates when none does, and keeps at most maxFree', () => {
    const pool = new KvBufferPool(2);
    const small = pool.take(1, 1, 64, 1);
    const big = pool.take(1, 1, 640, 1);
    const mid = pool.take(1, 1, 128, 1);
    pool.reclaim(new Set());
    // Three free, two kept: the smallest goes (sequences only grow; it is the one outgrown).
    expect(pool.bytes).toEqual({ lent: 0, free: (640 + 128) * 4 });
    expect(pool.take(1, 1, 100, 1).buffer).toBe(mid.buffer);
    expect(pool.take(1, 1, 100, 1).buffer).toBe(big.buffer);
    expect(pool.take(1, 1, 100, 1).buffer).not.toBe(small.buffer);
    expect(pool.allocations).toBe(4);
    expect(pool.bytes.lent).toBe((128 + 640 + 128) * 4);
  });
});
