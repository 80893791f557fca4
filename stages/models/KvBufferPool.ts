/**
 * Float32 buffers for KV stores, handed back when a store is left and taken again by the next one, and grown in place
 * when a store fills up.
 *
 * Each buffer is a resizable ArrayBuffer that reserves address space for RESERVE_BYTES and commits only what it has
 * been resized to; the kernel gives each committed page on its first touch. So a store that fills up grows in place
 * (no copy of what it holds, no second buffer twice its size), and a buffer taken again keeps the pages it had: a
 * batch that changes (a sequence joins or leaves) is copied into memory touched before. Fresh memory is what made
 * those steps slow: a first touch costs ~10x the copy (128 MB: ~45 ms against ~4.5 ms to fill it again on these
 * machines), and plain ArrayBuffers of 16-32 MB came from the C heap, zeroed whole by calloc and given back to the
 * kernel when freed: beside sixteen long answers a step that repacked or doubled their KV took 100-560 ms, every
 * sequence of the batch and any newcomer behind it waiting (bench/NOTES.md, "KV stores grown in place").
 *
 * Idle buffers are kept up to `maxBytes`, past that a returned buffer is left to the garbage collector. (They were
 * kept only up to the most the decoder had had in use at once: memory given back came back later as fresh pages, on a
 * machine that hands free memory back to its host: bench/NOTES.md, "KV stores grown in place".) A buffer taken again
 * holds the old store's keys and values: the store zeroes whatever it does not overwrite (AppendKvCache.pack).
 */

/** Address space each buffer reserves (nothing is committed beyond what it is resized to). */
export const RESERVE_BYTES = 2 ** 30;

/** Commits are rounded up to whole pages of this size. */
const PAGE_BYTES = 1 << 12;

function pages(bytes: number): number {
  return Math.max(PAGE_BYTES, Math.ceil(bytes / PAGE_BYTES) * PAGE_BYTES);
}

export class KvBufferPool {
  /** Idle buffers, any committed size. */
  private readonly idle: ArrayBuffer[] = [];
  private idleBytes = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held for reuse. */
  get bytes(): number {
    return this.idleBytes;
  }

  /**
   * `floats` floats from byte 0 of a buffer: an idle one already that large if there is one (the smallest), else the
   * largest idle one grown to it, else a new one.
   */
  take(floats: number): Float32Array {
    const bytes = floats * Float32Array.BYTES_PER_ELEMENT;
    const usable = this.idle.filter((b) => b.maxByteLength >= bytes);
    const fitting = usable.filter((b) => b.byteLength >= bytes);
    const pick = fitting.length > 0 ? smallest(fitting) : usable.length > 0 ? largest(usable) : null;
    let buffer: ArrayBuffer;
    if (pick) {
      buffer = this.idle.splice(this.idle.indexOf(pick), 1)[0];
      this.idleBytes -= buffer.byteLength;
      if (buffer.byteLength < bytes) buffer.resize(pages(bytes));
    } else {
      buffer = new ArrayBuffer(pages(bytes), { maxByteLength: Math.max(RESERVE_BYTES, pages(bytes)) });
    }
    return new Float32Array(buffer, 0, floats);
  }

  /**
   * The same buffer's first `floats` floats (what it holds kept), grown in place when it was shorter; null when its
   * reservation is too small (the caller takes another and copies).
   */
  grow(buffer: Float32Array, floats: number): Float32Array | null {
    const array = buffer.buffer as ArrayBuffer;
    const bytes = floats * Float32Array.BYTES_PER_ELEMENT;
    if (bytes > array.byteLength) {
      if (!array.resizable || array.maxByteLength < bytes) return null;
      array.resize(Math.min(array.maxByteLength, pages(bytes)));
    }
    return new Float32Array(array, 0, floats);
  }

  /** Hands a buffer from take() back; nothing may use it afterwards. */
  give(buffer: Float32Array): void {
    const array = buffer.buffer as ArrayBuffer;
    const size = array.byteLength;
    if (this.idleBytes + size > this.maxBytes) return;
    this.idle.push(array);
    this.idleBytes += size;
  }
}

function smallest(buffers: readonly ArrayBuffer[]): ArrayBuffer {
  return buffers.reduce((a, b) => (b.byteLength < a.byteLength ? b : a));
}

function largest(buffers: readonly ArrayBuffer[]): ArrayBuffer {
  return buffers.reduce((a, b) => (b.byteLength > a.byteLength ? b : a));
}
