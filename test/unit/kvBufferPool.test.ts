/**
 * KvBufferPool (stages/models/KvBufferPool.ts): regions come back to the next store that fits them, grow in place,
 * and give their pages back past the pool's bound. What they cost V8's collector: test/native/kvArena.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { KvBufferPool, REGION_BYTES, SLAB_BYTES } from '../../stages/models/KvBufferPool.ts';

describe('KvBufferPool', () => {
  it('hands a returned region out again, from its start, the smallest that fits before reusing a larger one', () => {
    const pool = new KvBufferPool(1 << 20);
    const a = pool.take(1000); // 4000 bytes: one page
    expect(a.length).toBe(1000);
    expect(a.buffer.byteLength).toBe(SLAB_BYTES);
    const big = pool.take(3000); // three pages
    expect(big.buffer).toBe(a.buffer); // regions of one slab
    expect(big.byteOffset).toBe(a.byteOffset + REGION_BYTES);
    pool.give(a);
    pool.give(big);
    expect(pool.bytes).toBe(4096 + 12_288);
    const b = pool.take(600); // both fit: the smaller
    expect([b.byteOffset, b.length]).toEqual([a.byteOffset, 600]);
    expect(pool.bytes).toBe(12_288);
    // Neither idle one holds five pages: the largest (pages it has are reused), not a new region.
    pool.give(b);
    const c = pool.take(5000);
    expect(c.byteOffset).toBe(big.byteOffset);
    expect([pool.regionCount, pool.slabCount]).toEqual([2, 1]);
  });

  it('grows a buffer in place, keeping what it holds; one larger than a region gets a slab of its own', () => {
    const pool = new KvBufferPool(1 << 20);
    const a = pool.take(1000);
    a.fill(7);
    const grown = pool.grow(a, 100_000)!;
    expect(grown.buffer === a.buffer && grown.byteOffset === a.byteOffset).toBe(true);
    expect(grown.length).toBe(100_000);
    expect(grown.subarray(0, 1000).every((x) => x === 7)).toBe(true);
    expect(grown[1000]).toBe(0); // fresh pages are zero
    expect(pool.grow(grown, REGION_BYTES / 4 + 1)).toBeNull(); // past the region: the caller copies
    const huge = pool.take(REGION_BYTES / 4 + 1);
    expect(huge.buffer).not.toBe(a.buffer);
    expect(huge.buffer.byteLength).toBe(REGION_BYTES + 4096);
    expect(pool.slabCount).toBe(2);
    expect(() => pool.grow(new Float32Array(16), 32)).toThrow(/did not hand out/);
    expect(() => pool.give(new Float32Array(16))).toThrow(/did not hand out/);
  });

  it('keeps idle pages up to its maximum, gives the rest back to the kernel, and reuses every region', () => {
    const pool = new KvBufferPool(8192);
    const [x, y, z] = [pool.take(1000), pool.take(1000), pool.take(1000)];
    for (const b of [x, y, z]) b.fill(3);
    pool.give(x);
    pool.give(y);
    pool.give(z); // over the maximum: its pages go back, it reads 0 when taken again
    expect(pool.bytes).toBe(8192);
    expect(pool.take(1000)[0]).toBe(3);
    expect(pool.take(1000)[0]).toBe(3);
    const again = pool.take(1000);
    expect(again.byteOffset).toBe(z.byteOffset);
    expect(again.every((v) => v === 0)).toBe(true);
    expect(pool.regionCount).toBe(3);
  });

  it('makes the regions it is told to expect before they are needed, from as few slabs as hold them', () => {
    const pool = new KvBufferPool(1 << 20);
    const perSlab = SLAB_BYTES / REGION_BYTES;
    pool.reserve(perSlab + 1);
    expect([pool.regionCount, pool.slabCount, pool.bytes]).toEqual([perSlab + 1, 2, 0]);
    const taken = Array.from({ length: perSlab + 1 }, () => pool.take(1000));
    expect([pool.regionCount, pool.slabCount]).toEqual([perSlab + 1, 2]); // none made while serving
    const slabs = [...new Set(taken.map((t) => t.buffer))];
    expect(slabs.length).toBe(2);
    const distinct = slabs.map((slab) => new Set(taken.filter((t) => t.buffer === slab).map((t) => t.byteOffset)).size);
    expect(distinct).toEqual([perSlab, 1]);
    pool.take(1000); // one more than expected: carved from the second slab's room
    expect([pool.regionCount, pool.slabCount]).toEqual([perSlab + 2, 2]);
  });
});
