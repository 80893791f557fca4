/** KvBufferPool (stages/models/KvBufferPool.ts): buffers come back by size class, within the pool's bounds. */
import { describe, expect, it } from 'vitest';
import { KvBufferPool } from '../../stages/models/KvBufferPool.ts';

describe('KvBufferPool', () => {
  it('hands a returned buffer out again for a request of its size class, from byte 0', () => {
    const pool = new KvBufferPool(1 << 20);
    const a = pool.take(1000); // 4000 bytes: the 4 KiB class
    expect(a.length).toBe(1000);
    expect(a.buffer.byteLength).toBe(4096);
    pool.give(a);
    expect(pool.bytes).toBe(4096);
    const b = pool.take(600);
    expect(b.buffer).toBe(a.buffer);
    expect([b.byteOffset, b.length]).toEqual([0, 600]);
    expect(pool.bytes).toBe(0);
    const c = pool.take(1025); // the 8 KiB class: a new buffer
    expect(c.buffer).not.toBe(a.buffer);
    expect(c.buffer.byteLength).toBe(8192);
  });

  it('keeps no more idle than it ever had in use at once, nor more than its maximum', () => {
    const pool = new KvBufferPool(1 << 20);
    const first = pool.take(1000);
    pool.give(first);
    const [x, y] = [pool.take(1000), pool.take(1000)]; // 8 KiB in use at the peak
    pool.give(x);
    pool.give(y);
    expect(pool.bytes).toBe(8192);
    // 16 KiB in use at most: a 16 KiB buffer given back beside the 8 KiB idle would make 24.
    const big = pool.take(4000);
    expect(pool.bytes).toBe(8192);
    pool.give(big);
    expect(pool.bytes).toBe(8192);
    const small = new KvBufferPool(4096);
    const [p, q] = [small.take(1000), small.take(1000)];
    small.give(p);
    small.give(q); // over the maximum: left to the garbage collector
    expect(small.bytes).toBe(4096);
    expect(small.take(1000).buffer).toBe(p.buffer);
    expect(small.take(1000).buffer).not.toBe(q.buffer);
  });
});
