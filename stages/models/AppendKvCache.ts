/**
 * Where one sequence's KV cache lives with an append-only decoder (cache.N.* [past, B, H, Dh] in,
 * cache_new.N.* [S, B, H, Dh] out, decoderStack.ts): its row of a batch store, a set of capacity buffers
 * [capacity, B, H, Dh] of which the first `total` positions are filled, every row left-padded to `total`.
 *
 * A steady batch (exactly the store's sequences, in its row order) is fed a prefix view of the buffers and
 * gets the step's new positions appended in place: JS work O(new positions), no large allocation except
 * when a buffer doubles. Only when the batch changes (a sequence joins, leaves or runs in another group)
 * are the rows repacked into a new store, once, as SeqKvCache does for the Optimum layout.
 */
import type { KvLayout } from './SeqKvCache.ts';

const MIN_CAPACITY = 16;

function capacityFor(positions: number): number {
  let c = MIN_CAPACITY;
  while (c < positions) c *= 2;
  return c;
}

/** One batch's cache: 2 * numLayers buffers (layer l key at 2l, value at 2l + 1), position-major. */
export class AppendStore {
  /** Positions filled in every row, left padding included. */
  total = 0;
  private buffers: Float32Array[];
  private capacity: number;

  constructor(
    readonly layout: KvLayout,
    readonly batchSize: number,
    /** Positions to allocate, as is (the doubling applies when it grows). */
    capacity: number,
  ) {
    this.capacity = capacity;
    this.buffers = Array.from({ length: 2 * layout.numLayers }, () => new Float32Array(this.capacity * this.stride));
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
    return new Float32Array(this.buffers[i].buffer, 0, this.total * this.stride);
  }

  /** Tensor i's whole buffer (for packing rows in and out). */
  buffer(i: number): Float32Array {
    return this.buffers[i];
  }

  /** Makes room for `positions` filled positions, doubling the buffers (with their content) when short. */
  reserve(positions: number): void {
    if (positions <= this.capacity) return;
    this.capacity = capacityFor(positions);
    const used = this.total * this.stride;
    this.buffers = this.buffers.map((old) => {
      const grown = new Float32Array(this.capacity * this.stride);
      grown.set(old.subarray(0, used));
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
}

export class AppendKvCache {
  /** Real positions held (the row's last `length` positions). */
  length = 0;
  private store: AppendStore | null = null;
  private row = 0;

  constructor(private readonly layout: KvLayout) {}

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

  /** A new store for these caches in this order, each row right-aligned to the longest; room for `extra` more. */
  static pack(layout: KvLayout, caches: readonly AppendKvCache[], extra: number): AppendStore {
    const pastLen = Math.max(...caches.map((c) => c.length));
    const store = new AppendStore(layout, caches.length, capacityFor(pastLen + extra));
    store.total = pastLen;
    caches.forEach((c, b) => c.copyRows(store, b, c.length));
    return store;
  }

  /** Copies this row's first `count` real positions into row b of dst, ending at dst.total. */
  private copyRows(dst: AppendStore, b: number, count: number): void {
    const src = this.store;
    if (!src || count === 0) return;
    const n = src.rowFloats;
    const first = src.total - this.length;
    const dstFirst = dst.total - count;
    for (let i = 0; i < 2 * this.layout.numLayers; i++) {
      const from = src.buffer(i);
      const to = dst.buffer(i);
      for (let p = 0; p < count; p++) {
        const s = ((first + p) * src.batchSize + this.row) * n;
        to.set(from.subarray(s, s + n), ((dstFirst + p) * dst.batchSize + b) * n);
      }
    }
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
    const own = new AppendStore(this.layout, 1, count);
    own.total = count;
    this.copyRows(own, 0, count);
    this.store = own;
    this.row = 0;
    this.length = count;
  }

  compact(): void {
    this.keepFirst(this.length);
  }

  /** After a step: the sequence lives at row `row` of `store`, `newTokens` positions longer. */
  adopt(store: AppendStore, row: number, newTokens: number): void {
    this.store = store;
    this.row = row;
    this.length += newTokens;
  }
}
