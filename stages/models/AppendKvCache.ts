/**
 * Where one sequence's KV cache lives with an append-only decoder (cache.N.* [past, B, H, Dh] in,
 * cache_new.N.* [S, B, H, Dh] out, decoderStack.ts): its row of a batch store, a set of capacity buffers
 * [capacity, B, H, Dh] of which the first `total` positions are filled, every row left-padded to `total`.
 *
 * A steady batch (exactly the store's sequences, in its row order) is fed a prefix view of the buffers and
 * gets the step's new positions appended in place: JS work O(new positions), no large allocation (a buffer that
 * doubles grows in place). Only when the batch changes (a sequence joins, leaves or runs in another group)
 * are the rows repacked into a new store, once, as SeqKvCache does for the Optimum layout. Stores take their
 * buffers from a KvBufferPool, grow them in place when they double, and hand them back when the last sequence leaves
 * them.
 */
import { addon } from '../../transport/shm/binding.ts';
import type { KvBufferPool } from './KvBufferPool.ts';
import type { KvLayout } from './SeqKvCache.ts';

const MIN_CAPACITY = 16;

/** KvLayout with the model's longest sequence, which sizes the pool's regions (KvBufferPool.regionBytesFor). */
export interface AppendLayout extends KvLayout {
  /** Positions a sequence may reach; unknown: as far as a region allows. */
  readonly maxPositions?: number;
}

/** Floats a tensor of a store of `batchSize` rows may grow to: the model's longest sequence in every row. */
export function storeMaxFloats(layout: AppendLayout, batchSize: number): number {
  return (layout.maxPositions ?? Infinity) * batchSize * layout.numKvHeads * layout.headDim;
}

function capacityFor(positions: number): number {
  let c = MIN_CAPACITY;
  while (c < positions) c *= 2;
  return c;
}

/** One batch's cache: 2 * numLayers buffers (layer l key at 2l, value at 2l + 1), position-major. */
export class AppendStore {
  /** Positions filled in every row, left padding included. */
  total = 0;
  /** Sequences whose row is here; at 0 the buffers go back to the pool. */
  private holders = 0;
  private buffers: Float32Array[];
  private capacity: number;

  constructor(
    readonly layout: AppendLayout,
    readonly batchSize: number,
    /** Positions to allocate, as is (the doubling applies when it grows). */
    capacity: number,
    private readonly pool: KvBufferPool,
  ) {
    this.capacity = capacity;
    this.buffers = Array.from({ length: 2 * layout.numLayers }, () =>
      pool.take(this.capacity * this.stride, this.maxFloats),
    );
  }

  /** Floats a tensor of this store may grow to (storeMaxFloats). */
  private get maxFloats(): number {
    return storeMaxFloats(this.layout, this.batchSize);
  }

  /** A sequence takes a row here. */
  hold(): void {
    this.holders++;
  }

  /** A sequence left its row; the last one out returns the buffers to the pool. */
  release(): void {
    if (--this.holders > 0) return;
    for (const b of this.buffers) this.pool.give(b);
    this.buffers = [];
  }

  /** Floats of one position of one row (heads * headDim). */
  get rowFloats(): number {
    return this.layout.numKvHeads * this.layout.headDim;
  }

  /** Floats of one position across the batch. */
  get stride(): number {
    return this.batchSize * this.rowFloats;
  }

  /** Tensor i's filled positions [total, B, H, Dh]: a view from byte 0 of its buffer, no copy. */
  view(i: number): Float32Array {
    return this.buffers[i].subarray(0, this.total * this.stride);
  }

  /** Tensor i's whole buffer (for packing rows in and out). */
  buffer(i: number): Float32Array {
    return this.buffers[i];
  }

  /** Makes room for `positions` filled positions, doubling the capacity (content kept) when short. */
  reserve(positions: number): void {
    if (positions <= this.capacity) return;
    this.capacity = capacityFor(positions);
    const used = this.total * this.stride;
    const floats = this.capacity * this.stride;
    this.buffers = this.buffers.map((old) => {
      // In place (KvBufferPool.grow): what the buffer holds stays where it is, no copy.
      const inPlace = this.pool.grow(old, floats);
      if (inPlace) return inPlace;
      const grown = this.pool.take(floats, this.maxFloats);
      grown.set(old.subarray(0, used));
      this.pool.give(old);
      return grown;
    });
  }

  /** Appends a step's new positions: fresh[i] is tensor i's [numTokens, B, H, Dh]. */
  append(fresh: readonly Float32Array[], numTokens: number): void {
    this.reserve(this.total + numTokens);
    const at = this.total * this.stride;
    fresh.forEach((f, i) => this.buffers[i].set(f.subarray(0, numTokens * this.stride), at));
    this.total += numTokens;
  }

  /**
   * Copies positions [from, from + count) of rows [row, row + rows) into rows [toRow, toRow + rows) of dst,
   * ending at dst.total. Position-major, so consecutive rows are one block per position: one copy per position
   * and tensor for the whole run, not one per row.
   */
  copyRowsTo(dst: AppendStore, row: number, rows: number, from: number, count: number, toRow: number): void {
    const n = this.rowFloats;
    const dstFirst = dst.total - count;
    for (let i = 0; i < this.buffers.length; i++) {
      // One native strided copy a row run and tensor, not a `subarray` + `set` a position: eleven scattered rows of 830
      // positions (a seat turn's repack) in 6 ms against 18 ms warm and 45 ms the first time (bench/NOTES.md, "KV
      // stores grown in place").
      addon.copyStrided(
        dst.buffers[i],
        (dstFirst * dst.batchSize + toRow) * n,
        dst.batchSize * n,
        this.buffers[i],
        (from * this.batchSize + row) * n,
        this.batchSize * n,
        rows * n,
        count,
      );
    }
  }

  /** Zeroes positions [0, positions) of rows [row, row + rows): padding in a buffer that may be reused. */
  clearRows(row: number, rows: number, positions: number): void {
    const n = this.rowFloats;
    for (const buffer of this.buffers) addon.fillStrided(buffer, row * n, this.batchSize * n, rows * n, positions, 0);
  }
}

export class AppendKvCache {
  /** Real positions held (the row's last `length` positions). */
  length = 0;
  private store: AppendStore | null = null;
  private row = 0;

  constructor(
    private readonly layout: AppendLayout,
    private readonly pool: KvBufferPool,
  ) {}

  private get positionBytes(): number {
    const { numLayers, numKvHeads, headDim } = this.layout;
    return 2 * numLayers * numKvHeads * headDim * Float32Array.BYTES_PER_ELEMENT;
  }

  /** Positions of its row, padding included. */
  get total(): number {
    return this.store?.total ?? 0;
  }

  /** Bytes this sequence holds: its row's filled positions, padding included (as SeqKvCache counts). */
  get bytes(): number {
    return this.total * this.positionBytes;
  }

  /** The store this sequence points into (identity matters: shared by the rows of one batch). */
  get storage(): AppendStore | null {
    return this.store;
  }

  /** True when these caches are, in this order, all the rows of one store: run them on it as is. */
  static sameBatch(caches: readonly AppendKvCache[]): boolean {
    const store = caches[0].store;
    if (!store || store.batchSize !== caches.length) return false;
    return caches.every((c, b) => c.store === store && c.row === b);
  }

  /**
   * A new store for these caches in this order, each row right-aligned to the longest; room for `extra` more.
   * Caches that sit in consecutive rows of one store (a batch that a sequence joins or leaves) move as one block:
   * each position of the run is copied once, padding included (masked either way). Padding not copied is zeroed:
   * a reused buffer holds another batch's keys, and a masked key must still be finite (0 x NaN is NaN).
   */
  static pack(caches: readonly AppendKvCache[], extra: number): AppendStore {
    const { layout, pool } = caches[0];
    const pastLen = Math.max(...caches.map((c) => c.length));
    const store = new AppendStore(layout, caches.length, capacityFor(pastLen + extra), pool);
    store.total = pastLen;
    for (let b = 0; b < caches.length;) {
      const first = caches[b];
      let rows = 1;
      let count = first.length;
      while (
        first.store &&
        b + rows < caches.length &&
        caches[b + rows].store === first.store &&
        caches[b + rows].row === first.row + rows
      ) {
        count = Math.max(count, caches[b + rows].length);
        rows++;
      }
      if (first.store && count > 0) first.store.copyRowsTo(store, first.row, rows, first.store.total - count, count, b);
      store.clearRows(b, rows, pastLen - count);
      b += rows;
    }
    return store;
  }

  /**
   * Keeps the first `keep` positions (all when keep >= length) in a store of its own, exactly that large (it
   * doubles when the sequence runs again). Called for a reused prefix, and when the rest of its batch moves on
   * without it: otherwise it would keep the whole batch's buffers alive, padding and all, while its byte count
   * says one row.
   */
  keepFirst(keep: number): void {
    const count = Math.min(keep, this.length);
    if (!this.store) return;
    if (count === this.length && this.store.batchSize === 1 && this.store.total === this.length) return;
    const own = new AppendStore(this.layout, 1, count, this.pool);
    own.total = count;
    this.store.copyRowsTo(own, this.row, 1, this.store.total - this.length, count, 0);
    this.place(own, 0);
    this.length = count;
  }

  /** A new cache holding a copy of this one's first `keep` positions in a store of its own (this one is untouched). */
  copyFirst(keep: number): AppendKvCache {
    const copy = new AppendKvCache(this.layout, this.pool);
    const count = Math.min(keep, this.length);
    if (!this.store || count === 0) return copy;
    const own = new AppendStore(this.layout, 1, count, this.pool);
    own.total = count;
    this.store.copyRowsTo(own, this.row, 1, this.store.total - this.length, count, 0);
    copy.place(own, 0);
    copy.length = count;
    return copy;
  }

  /** The sequence is dropped: its row is given up (the store's buffers return to the pool with the last row). */
  release(): void {
    this.store?.release();
    this.store = null;
    this.length = 0;
  }

  private place(store: AppendStore, row: number): void {
    if (store !== this.store) {
      store.hold();
      this.store?.release();
      this.store = store;
    }
    this.row = row;
  }

  compact(): void {
    this.keepFirst(this.length);
  }

  /** After a step: the sequence lives at row `row` of `store`, `newTokens` positions longer. */
  adopt(store: AppendStore, row: number, newTokens: number): void {
    this.place(store, row);
    this.length += newTokens;
  }
}
