/**
 * Backing stores for the KV presents, recycled from step to step. Without it every decode step gets 2 x numLayers
 * new output buffers from onnxruntime (the whole cache again, one position longer: ~2.6 MB per Talker step at 320
 * positions), and the garbage collector spends a sixth of the Talker's time on them. onnxruntime writes a
 * pre-allocated output in place, so a step takes buffers from here and the previous step's presents, which the
 * step consumed as its past, come back once no sequence's cache points into them: in steady decoding two sets of
 * buffers alternate and a step allocates no KV memory at all.
 *
 * Capacity is rounded up to whole blocks of positions, so a buffer serves the many steps until its sequences grow
 * past the block; the free list is bounded, smallest buffers dropped first (they are the ones outgrown).
 */
const BLOCK_POSITIONS = 64;

export class KvBufferPool {
  private readonly free: ArrayBuffer[] = [];
  private readonly lent = new Set<ArrayBuffer>();
  /** Buffers created since start (a steady decode adds none). */
  allocations = 0;

  /** maxFree: buffers kept for reuse (two steps' worth of presents is the steady state). */
  constructor(private readonly maxFree: number) {}

  /**
   * A view of exactly floats values ([batch, heads, positions, headDim]) over a free buffer that fits, or a new one
   * holding `positions` rounded up to a block. Its contents are garbage: the step overwrites all of it.
   */
  take(batch: number, heads: number, positions: number, headDim: number): Float32Array {
    const floats = batch * heads * positions * headDim;
    const bytes = floats * Float32Array.BYTES_PER_ELEMENT;
    let best = -1;
    for (let i = 0; i < this.free.length; i++)
      if (this.free[i].byteLength >= bytes && (best < 0 || this.free[i].byteLength < this.free[best].byteLength))
        best = i;
    if (best < 0) this.allocations++;
    const buffer =
      best >= 0
        ? this.free.splice(best, 1)[0]
        : new ArrayBuffer(
            batch *
              heads *
              Math.ceil(positions / BLOCK_POSITIONS) *
              BLOCK_POSITIONS *
              headDim *
              Float32Array.BYTES_PER_ELEMENT,
          );
    this.lent.add(buffer);
    return new Float32Array(buffer, 0, floats);
  }

  /** Takes back every lent buffer that no cache holds any more (inUse: the buffers the caches point into now). */
  reclaim(inUse: ReadonlySet<ArrayBufferLike>): void {
    for (const buffer of this.lent) {
      if (inUse.has(buffer)) continue;
      this.lent.delete(buffer);
      this.free.push(buffer);
    }
    if (this.free.length > this.maxFree) {
      this.free.sort((a, b) => b.byteLength - a.byteLength);
      this.free.length = this.maxFree;
    }
  }

  /** Bytes lent out and kept free (lent buffers hold caches, counted by them too, with the block's headroom). */
  get bytes(): { lent: number; free: number } {
    let lent = 0;
    for (const b of this.lent) lent += b.byteLength;
    return { lent, free: this.free.reduce((n, b) => n + b.byteLength, 0) };
  }
}
