/**
 * One sequence's KV cache: per layer a key and a value buffer laid out [heads, capacity, headDim], so a
 * step appends its new rows per head without moving the old ones, and a batch packs each head's rows
 * with one contiguous copy. Capacity grows by 1.5x in steps of GROW_POSITIONS.
 *
 * A sequence decoding alone skips both copies: it adopts the step's present tensors as its buffers
 * (capacity == length, i.e. exactly [1, heads, length, headDim]) and feeds them back as the next past.
 */
export interface KvLayout {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

const GROW_POSITIONS = 64;

export class SeqKvCache {
  length = 0;
  private capacity = 0;
  /** 2 * numLayers buffers: layer l key at 2l, value at 2l + 1. */
  private buffers: Float32Array[] = [];

  constructor(private readonly layout: KvLayout) {}

  /** Bytes allocated for this sequence (what it holds, not just what it uses). */
  get bytes(): number {
    return this.buffers.reduce((sum, b) => sum + b.byteLength, 0);
  }

  private ensureCapacity(positions: number): void {
    if (positions <= this.capacity) return;
    const { numLayers, numKvHeads, headDim } = this.layout;
    const wanted = Math.max(positions, Math.ceil(this.capacity * 1.5));
    const capacity = Math.ceil(wanted / GROW_POSITIONS) * GROW_POSITIONS;
    const next: Float32Array[] = [];
    for (let i = 0; i < 2 * numLayers; i++) {
      const buf = new Float32Array(numKvHeads * capacity * headDim);
      const old = this.buffers[i];
      if (old) {
        for (let h = 0; h < numKvHeads; h++) {
          buf.set(old.subarray(h * this.capacity * headDim, (h * this.capacity + this.length) * headDim), h * capacity * headDim);
        }
      }
      next.push(buf);
    }
    this.buffers = next;
    this.capacity = capacity;
  }

  /** True when buffer i is exactly [heads, length, headDim]: it can be fed as a batch-of-one past as is. */
  get tight(): boolean {
    return this.capacity === this.length;
  }

  buffer(i: number): Float32Array {
    return this.buffers[i] ?? new Float32Array(0);
  }

  /** Takes a batch-of-one step's present tensors [1, heads, totalLen, headDim] as the cache (no copy). */
  adopt(presents: readonly Float32Array[], totalLen: number): void {
    this.buffers = [...presents];
    this.capacity = totalLen;
    this.length = totalLen;
  }

  /**
   * Copies this sequence's rows of buffer i into a batch past tensor [B, heads, pastLen, headDim] at batch
   * row b, right-aligned (left padding): rows [pastLen - length, pastLen).
   */
  packInto(i: number, dst: Float32Array, b: number, pastLen: number): void {
    const { numKvHeads, headDim } = this.layout;
    const src = this.buffers[i];
    if (!src || this.length === 0) return;
    const pad = pastLen - this.length;
    for (let h = 0; h < numKvHeads; h++) {
      const from = h * this.capacity * headDim;
      dst.set(src.subarray(from, from + this.length * headDim), ((b * numKvHeads + h) * pastLen + pad) * headDim);
    }
  }

  /**
   * Appends the last newLen rows of batch row b of every present tensor [B, heads, totalLen, headDim]
   * (presents[i] pairs with buffer i), then advances length.
   */
  appendFrom(presents: readonly Float32Array[], b: number, totalLen: number, newLen: number): void {
    const { numKvHeads, headDim } = this.layout;
    this.ensureCapacity(this.length + newLen);
    for (let i = 0; i < presents.length; i++) {
      const src = presents[i];
      const dst = this.buffers[i];
      for (let h = 0; h < numKvHeads; h++) {
        const from = ((b * numKvHeads + h) * totalLen + (totalLen - newLen)) * headDim;
        dst.set(src.subarray(from, from + newLen * headDim), (h * this.capacity + this.length) * headDim);
      }
    }
    this.length += newLen;
  }
}
