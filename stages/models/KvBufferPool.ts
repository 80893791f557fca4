/**
 * Float32 buffers for KV stores, handed back when a store is left and taken again by the next one. A batch that
 * changes (a sequence joins or leaves) is copied into a new store, and a store that fills up doubles: in fresh
 * memory each first touch of a page faults, which on these machines costs ~4x the copy itself (25 MB: ~20 ms
 * first touch against ~4.5 ms into memory touched before; bench/README.md), and stalls every sequence of the batch.
 *
 * Buffers are kept in power-of-two byte sizes (only the pages a store writes are ever touched). Idle buffers are
 * kept up to the most the decoder has had in use at once (so its memory stays within twice its peak) or `maxBytes`,
 * whichever is less; past that a returned buffer is left to the garbage collector. A buffer taken again holds the
 * old store's keys and values: the store zeroes whatever it does not overwrite (AppendKvCache.pack).
 */
const MIN_BYTES = 1 << 12;

function sizeClass(bytes: number): number {
  let size = MIN_BYTES;
  while (size < bytes) size *= 2;
  return size;
}

export class KvBufferPool {
  private readonly idle = new Map<number, ArrayBuffer[]>();
  private idleBytes = 0;
  private inUse = 0;
  private peakInUse = 0;

  constructor(readonly maxBytes: number) {}

  /** Bytes held for reuse. */
  get bytes(): number {
    return this.idleBytes;
  }

  /** `floats` floats from byte 0 of a buffer: one returned earlier if one of its size class is idle. */
  take(floats: number): Float32Array {
    const size = sizeClass(floats * Float32Array.BYTES_PER_ELEMENT);
    const reused = this.idle.get(size)?.pop();
    if (reused) this.idleBytes -= size;
    this.inUse += size;
    this.peakInUse = Math.max(this.peakInUse, this.inUse);
    return new Float32Array(reused ?? new ArrayBuffer(size), 0, floats);
  }

  /** Hands a buffer from take() back; nothing may use it afterwards. */
  give(buffer: Float32Array): void {
    const array = buffer.buffer as ArrayBuffer;
    const size = array.byteLength;
    this.inUse -= size;
    if (this.idleBytes + size > Math.min(this.maxBytes, this.peakInUse)) return;
    const list = this.idle.get(size);
    if (list) list.push(array);
    else this.idle.set(size, [array]);
    this.idleBytes += size;
  }
}
