/**
 * KvBufferPool (stages/models/KvBufferPool.ts): regions come back to the next store that fits them, grow in place,
 * and give their pages back past the pool's bound. What they cost V8's collector: test/native/kvArena.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AppendKvCache } from '../../stages/models/AppendKvCache.ts';
import { KvBufferPool, REGION_BYTES, SLAB_BYTES, regionBytesFor } from '../../stages/models/KvBufferPool.ts';

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

  it('sizes a region by how far its buffer may grow, and hands it out again only for that size', () => {
    expect(regionBytesFor(100, 100)).toBe(4096);
    expect(regionBytesFor(100, 5000)).toBe(8192);
    expect(regionBytesFor(5000, 100)).toBe(8192); // never smaller than the buffer
    expect(regionBytesFor(100, Infinity)).toBe(REGION_BYTES);
    expect(regionBytesFor(REGION_BYTES + 1, Infinity)).toBe(REGION_BYTES + 4096); // a slab of its own
    const pool = new KvBufferPool(1 << 20);
    const small = pool.take(100, 1024); // may grow to 4 KB
    const large = pool.take(100); // may grow as far as a region allows
    expect(large.byteOffset).toBe(small.byteOffset + 4096);
    expect(pool.grow(small, 1024)!.byteOffset).toBe(small.byteOffset); // in place up to its bound
    expect(pool.grow(small, 1025)).toBeNull();
    pool.give(small);
    pool.give(large);
    expect(pool.take(50).byteOffset).toBe(large.byteOffset); // the idle small one is not for a growing buffer
    expect(pool.take(50, 1000).byteOffset).toBe(small.byteOffset);
    expect(pool.take(50, 1000).byteOffset).toBe(large.byteOffset + REGION_BYTES); // none idle: a new one of its size
    pool.reserve(3, 1000);
    expect(pool.regionCount).toBe(4); // three of that size in all, one made now
  });

  it("puts a model's stores of one sequence (prefix-cache entries) in regions their size: many to one slab", () => {
    const pool = new KvBufferPool(1 << 20);
    const layout = { numLayers: 1, numKvHeads: 2, headDim: 32, maxPositions: 4096 }; // 1 MB a tensor at most
    const entries = Array.from({ length: 1500 }, () => {
      const c = new AppendKvCache(layout, pool);
      const store = AppendKvCache.pack([c], 20);
      store.append(
        [0, 1].map(() => new Float32Array(20 * 64).fill(1)),
        20,
      );
      c.adopt(store, 0, 20);
      c.keepFirst(16); // what the prefix cache keeps: a store of its own
      return c;
    });
    expect(pool.slabCount).toBe(1); // 3,000 regions of 1 MB; of 64 MB, 47 slabs
    const [a, b] = entries.map((c) => c.storage!.buffer(0).byteOffset);
    expect(Math.abs(b - a) % (1 << 20)).toBe(0);
    // A batch of four may grow four times as far: its regions are four times as large.
    const batch = AppendKvCache.pack(
      Array.from({ length: 4 }, () => new AppendKvCache(layout, pool)),
      1,
    );
    expect(batch.buffer(1).byteOffset - batch.buffer(0).byteOffset).toBe(4 << 20);
    for (const c of entries) c.release();
  });
});
