/**
 * Float32 buffers for KV stores, handed back when a store is left and taken again by the next one, and grown in place
 * when a store fills up.
 *
 * Each buffer is a view of a region of memory the native addon maps outside V8's heap (native/src/arena.h): address
 * space of which the kernel commits each page on its first touch. So a store that fills up grows in place (a longer
 * view of the same region: no copy of what it holds, no second buffer twice its size), and a region taken again keeps
 * the pages it had: a batch that changes (a sequence joins or leaves) is copied into memory touched before. Fresh
 * memory is what made those steps slow: a first touch costs ~10x the copy (128 MB: ~45 ms against ~4.5 ms to fill it
 * again on these machines), and plain ArrayBuffers of 16-32 MB came from the C heap, zeroed whole by calloc and given
 * back to the kernel when freed: beside sixteen long answers a step that repacked or doubled their KV took 100-560
 * ms, every sequence of the batch and any newcomer behind it waiting (bench/NOTES.md, "KV stores grown in place").
 *
 * Regions are carved from slabs of SLAB_BYTES, one ArrayBuffer each, made when the last has no room left and kept.
 * V8 does not count a slab as external memory (its backing store's deleter does nothing: native/src/arena.h), so
 * neither a slab nor a store's growth starts a collection. V8's resizable ArrayBuffers, which this pool took first,
 * added every growth to that count for good, and V8 runs a mark-compact each time the count grows by 64 MB: a Talker
 * whose stores came and went under sixteen long answers counted 8 GB of external memory on a 30 MB heap and ran one
 * every second, 10-44 ms each on its own thread (bench/NOTES.md, "The KV pool's phantom external memory"). Slabs as
 * N-API's external buffers then counted 4 GiB each: a memory-reducing mark-compact (25-45 ms) whenever one was made,
 * at load or in the 47th answer of a c=1 run (bench/NOTES.md, "Slabs V8 does not count"). A decoder reserves the
 * regions it expects at its model's load (reserve(), KvDecoder): a machine without the address space for them says so
 * before the stage is READY, not in its first answers.
 *
 * A region is as large as its store can grow (the caller says: its model's longest sequence at its batch), a power of
 * two up to REGION_BYTES, and goes only to stores of that size: a prefix-cache entry, a batch of one held for minutes,
 * takes 4 MB of address space (tiny-omni's Thinker), not 64 (bench/NOTES.md, "A stage's heap may grow 4x; prefix-cache
 * entries in regions their size").
 *
 * Idle regions keep their pages up to `maxBytes` in all; past that, a returned region's pages go back to the kernel
 * (the region stays, for the next store, at no cost but address space). Regions are never dropped, so there are only
 * as many of a size as the most stores' tensors of that size ever held at once. A buffer larger than a region gets a
 * slab of its own. A region taken again holds the old store's keys and values: the store zeroes whatever it does not
 * overwrite (AppendKvCache.pack).
 */
import { addon } from '../../transport/shm/binding.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';

/** Address space of one region: a store's tensor grows in place up to this (16 rows of 256 floats, 4,096 positions). */
export const REGION_BYTES = 64 << 20;

/** Address space of one slab: the most one ArrayBuffer may have in Node. */
export const SLAB_BYTES = 2 ** 32;

/** Commits are counted in whole pages of this size. */
const PAGE_BYTES = 1 << 12;

function pages(bytes: number): number {
  return Math.max(PAGE_BYTES, Math.ceil(bytes / PAGE_BYTES) * PAGE_BYTES);
}

/**
 * The region for a buffer of `bytes` that may grow to `maxBytes`: the power of two that holds the larger, at most
 * REGION_BYTES (the buffer is copied if it outgrows that); a buffer larger than a region gets its own slab, its size.
 */
export function regionBytesFor(bytes: number, maxBytes: number): number {
  if (bytes > REGION_BYTES) return pages(bytes);
  const want = Math.min(Math.max(bytes, maxBytes), REGION_BYTES);
  let size = PAGE_BYTES;
  while (size < want) size *= 2;
  return size;
}

interface Region {
  readonly slab: ArrayBuffer;
  readonly offset: number;
  readonly size: number;
  /** Bytes handed out since its pages were last released: what it may have committed. */
  committed: number;
}

export class KvBufferPool {
  /** Idle regions, any committed size. */
  private readonly idle: Region[] = [];
  /** Every region, by slab and offset. */
  private readonly regions = new Map<ArrayBuffer, Map<number, Region>>();
  /** The slab new regions are carved from, and where the next one starts. */
  private current: ArrayBuffer | null = null;
  private carved = 0;
  private idleBytes = 0;
  private made = 0;
  /** Regions made so far by size. */
  private readonly madeBySize = new Map<number, number>();

  constructor(readonly maxBytes: number) {}

  /** Bytes the idle regions may hold committed. */
  get bytes(): number {
    return this.idleBytes;
  }

  /** Regions made so far (idle or in use). */
  get regionCount(): number {
    return this.made;
  }

  /** Slabs made so far. */
  get slabCount(): number {
    return this.regions.size;
  }

  /**
   * Makes regions for buffers that may grow to `maxFloats` now, up to `regions` of their size in all (idle, no page
   * committed), so that the address space they need is mapped before they are needed (at a model's load, where a
   * limit on it is an error of the stage's boot, not of its first requests).
   */
  reserve(regions: number, maxFloats = Infinity): void {
    const size = regionBytesFor(PAGE_BYTES, maxFloats * Float32Array.BYTES_PER_ELEMENT);
    while ((this.madeBySize.get(size) ?? 0) < regions) this.idle.push(this.carve(size));
  }

  /**
   * `floats` floats from the start of a region of the size for `maxFloats` (regionBytesFor): an idle one of that size
   * already that large if there is one (the smallest), else the largest idle one of that size (its pages reused as far
   * as they go), else a new one. A buffer larger than a region takes any idle slab of its own large enough.
   */
  take(floats: number, maxFloats = Infinity): Float32Array {
    const bytes = floats * Float32Array.BYTES_PER_ELEMENT;
    const size = regionBytesFor(bytes, maxFloats * Float32Array.BYTES_PER_ELEMENT);
    const usable = this.idle.filter((r) => (size > REGION_BYTES ? r.size >= bytes : r.size === size));
    const fitting = usable.filter((r) => r.committed >= bytes);
    const pick = fitting.length > 0 ? smallest(fitting) : usable.length > 0 ? largest(usable) : null;
    let region: Region;
    if (pick) {
      this.idle.splice(this.idle.indexOf(pick), 1);
      this.idleBytes -= pick.committed;
      region = pick;
    } else {
      region = this.carve(size);
    }
    region.committed = Math.max(region.committed, pages(bytes));
    return new Float32Array(region.slab, region.offset, floats);
  }

  /**
   * The same region's first `floats` floats (what it holds kept); null when the region is too small (the caller takes
   * another and copies).
   */
  grow(buffer: Float32Array, floats: number): Float32Array | null {
    const region = this.regionOf(buffer);
    const bytes = floats * Float32Array.BYTES_PER_ELEMENT;
    if (bytes > region.size) return null;
    region.committed = Math.max(region.committed, pages(bytes));
    return new Float32Array(region.slab, region.offset, floats);
  }

  /** Hands a buffer from take() back; nothing may use it afterwards. */
  give(buffer: Float32Array): void {
    const region = this.regionOf(buffer);
    if (this.idleBytes + region.committed > this.maxBytes) {
      addon.releasePages(region.slab, region.offset, region.size);
      region.committed = 0;
    }
    this.idle.push(region);
    this.idleBytes += region.committed;
  }

  /**
   * A new region of `size` (regionBytesFor): the next of the current slab, a new slab when that has no room left, a
   * slab of its own when larger than REGION_BYTES. Sizes are powers of two of whole pages, so every region starts on
   * a page.
   */
  private carve(size: number): Region {
    let slab: ArrayBuffer;
    let offset = 0;
    if (size > REGION_BYTES) {
      slab = addon.reserveMemory(size);
    } else {
      if (!this.current || this.carved + size > this.current.byteLength) {
        this.current = addon.reserveMemory(SLAB_BYTES);
        this.carved = 0;
      }
      slab = this.current;
      offset = this.carved;
      this.carved += size;
    }
    const region: Region = { slab, offset, size, committed: 0 };
    let bySlab = this.regions.get(slab);
    if (!bySlab) this.regions.set(slab, (bySlab = new Map()));
    bySlab.set(offset, region);
    this.made++;
    this.madeBySize.set(size, (this.madeBySize.get(size) ?? 0) + 1);
    return region;
  }

  private regionOf(buffer: Float32Array): Region {
    const region = this.regions.get(buffer.buffer as ArrayBuffer)?.get(buffer.byteOffset);
    if (!region) throw new ChorusError(ErrorCodes.INTERNAL, 'KvBufferPool: a buffer this pool did not hand out');
    return region;
  }
}

function smallest(regions: readonly Region[]): Region {
  return regions.reduce((a, b) => (b.committed < a.committed ? b : a));
}

function largest(regions: readonly Region[]): Region {
  return regions.reduce((a, b) => (b.committed > a.committed ? b : a));
}
