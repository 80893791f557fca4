/**
 * Where one sequence's KV cache lives: its row of the present tensors of the last step it took part in.
 * A step's presents [B, heads, total, headDim] hold every sequence of the batch, left-padded to `total`.
 *
 * No copy in steady state: when the next step runs exactly the same sequences in the same order (a
 * stable decode batch, or one sequence alone), those presents are fed back as the past unchanged — each
 * row keeps its left padding, and every row grows by the same numTokens. Only when the batch changes
 * (a sequence joins, leaves or runs in another group) are the rows repacked into a new past, once.
 */
export interface KvLayout {
  readonly numLayers: number;
  readonly numKvHeads: number;
  readonly headDim: number;
}

export class SeqKvCache {
  /** Real positions held (the row's last `length` positions). */
  length = 0;
  /** The presents of the last step: 2 * numLayers tensors, layer l key at 2l, value at 2l + 1. */
  private presents: readonly Float32Array[] = [];
  private batchSize = 0;
  private row = 0;
  /** Positions per row in `presents`, padding included. */
  total = 0;

  constructor(private readonly layout: KvLayout) {}

  private get positionBytes(): number {
    const { numLayers, numKvHeads, headDim } = this.layout;
    return 2 * numLayers * numKvHeads * headDim * Float32Array.BYTES_PER_ELEMENT;
  }

  /** Bytes this sequence holds: its row, padding included (the padding is memory it keeps alive). */
  get bytes(): number {
    return this.total * this.positionBytes;
  }

  /** True when these caches are, in this order, all the rows of one step's presents: feed them back as is. */
  static sameBatch(caches: readonly SeqKvCache[]): boolean {
    const first = caches[0];
    if (first.presents.length === 0 || first.batchSize !== caches.length) return false;
    return caches.every((c, b) => c.presents === first.presents && c.row === b);
  }

  /** The shared present tensor i (only meaningful when sameBatch held). */
  shared(i: number): Float32Array {
    return this.presents[i];
  }

  /** Copies this sequence's real rows of tensor i into a past [B, heads, pastLen, headDim] at row b, right-aligned. */
  packInto(i: number, dst: Float32Array, b: number, pastLen: number): void {
    if (this.length === 0) return;
    const { numKvHeads, headDim } = this.layout;
    const src = this.presents[i];
    const pad = this.total - this.length;
    for (let h = 0; h < numKvHeads; h++) {
      const from = ((this.row * numKvHeads + h) * this.total + pad) * headDim;
      dst.set(
        src.subarray(from, from + this.length * headDim),
        ((b * numKvHeads + h) * pastLen + (pastLen - this.length)) * headDim,
      );
    }
  }

  /** The present tensors this sequence points into (identity matters: shared by the rows of one step). */
  get storage(): readonly Float32Array[] {
    return this.presents;
  }

  /**
   * Copies this sequence's real rows into tensors of its own. Called when the rest of its batch moves on
   * without it (it waits for input, or was left out of a step): otherwise it would keep the whole batch's
   * tensors alive, padding and all, while its byte count says one row.
   */
  compact(): void {
    if (this.batchSize <= 1 && this.total === this.length) return;
    const own = this.presents.map((_, i) => {
      const dst = new Float32Array(this.layout.numKvHeads * this.length * this.layout.headDim);
      this.packInto(i, dst, 0, this.length);
      return dst;
    });
    this.presents = own;
    this.batchSize = 1;
    this.row = 0;
    this.total = this.length;
  }

  /**
   * Keeps the first `keep` positions, in tensors of its own (a reused prefix: the rest of the sequence it was cut
   * from went on differently). The batch it shared tensors with is not touched.
   */
  keepFirst(keep: number): void {
    if (keep >= this.length) return this.compact();
    const { numKvHeads, headDim } = this.layout;
    const pad = this.total - this.length;
    this.presents = this.presents.map((src) => {
      const dst = new Float32Array(numKvHeads * keep * headDim);
      for (let h = 0; h < numKvHeads; h++) {
        const from = ((this.row * numKvHeads + h) * this.total + pad) * headDim;
        dst.set(src.subarray(from, from + keep * headDim), h * keep * headDim);
      }
      return dst;
    });
    this.batchSize = 1;
    this.row = 0;
    this.length = keep;
    this.total = keep;
  }

  /** A new cache holding a copy of this one's first `keep` positions in tensors of its own (this one is untouched). */
  copyFirst(keep: number): SeqKvCache {
    const copy = new SeqKvCache(this.layout);
    copy.presents = this.presents;
    copy.batchSize = this.batchSize;
    copy.row = this.row;
    copy.total = this.total;
    copy.length = this.length;
    // Present tensors are outputs of a run, never written afterwards: the copy may share them until it cuts.
    copy.keepFirst(Math.min(keep, this.length));
    return copy;
  }

  /** After a step: the sequence now lives at row `row` of these presents, `newTokens` positions longer. */
  adopt(presents: readonly Float32Array[], batchSize: number, row: number, total: number, newTokens: number): void {
    this.presents = presents;
    this.batchSize = batchSize;
    this.row = row;
    this.total = total;
    this.length += newTokens;
  }
}
