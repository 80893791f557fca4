/**
 * A single-producer single-consumer byte ring in POSIX shared memory (native/src/ring.h has the layout).
 * One process creates it and owns the name; the peer attaches. Nothing blocks the JS thread: a reader waits on the
 * ring's doorbell FIFO from its own event loop (native/src/bell.h), a writer waiting for room on a native
 * background thread, woken through a futex in the segment.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { FrameParts } from '../Connector.ts';
import { raceDeadline } from '../KeyedMailbox.ts';
import { addon, toChorusError, WaitStatus, type NativeRing } from './binding.ts';
import { newSegmentName, sweepStaleSegments } from './segments.ts';

export interface ShmRingCreateOptions {
  /** Data bytes; rounded up to a multiple of 8. The largest frame is capacityBytes - 4. */
  capacityBytes: number;
}

function frameBytesOf(parts: FrameParts): number {
  if (!Array.isArray(parts)) return (parts as Uint8Array).byteLength;
  let n = 0;
  for (const p of parts as readonly Uint8Array[]) n += p.byteLength;
  return n;
}

export class ShmRing implements Disposable {
  readonly name: string;
  readonly capacityBytes: number;
  readonly maxFrameBytes: number;
  #native: NativeRing | null;
  // Writers that had to wait, chained so that frames enter the ring in call order (FIFO).
  #writeTail: Promise<unknown> = Promise.resolve();
  #waitingWrites = 0;
  #reading = false;

  private constructor(native: NativeRing) {
    this.#native = native;
    this.name = native.name;
    this.capacityBytes = native.capacityBytes;
    this.maxFrameBytes = native.maxFrameBytes;
  }

  /** Creates a new segment (O_CREAT|O_EXCL, mode 0600) named /chorus-<pid>-<random>. The caller owns it. */
  static create(options: ShmRingCreateOptions): ShmRing {
    try {
      return new ShmRing(new addon.Ring(newSegmentName(), options.capacityBytes, true));
    } catch (err) {
      throw toChorusError(err);
    }
  }

  /** Maps an existing segment created by another process (or this one). */
  static attach(name: string): ShmRing {
    try {
      return new ShmRing(new addon.Ring(name, 0, false));
    } catch (err) {
      throw toChorusError(err);
    }
  }

  /** shm_unlink by name; false if it did not exist. For the owner, e.g. after a stage crash. */
  static unlinkByName(name: string): boolean {
    try {
      return addon.unlink(name);
    } catch (err) {
      throw toChorusError(err);
    }
  }

  /** Unlinks segments whose owner process has died; returns their names. */
  static sweepStaleSegments(): string[] {
    return sweepStaleSegments();
  }

  get closed(): boolean {
    return this.#native === null;
  }

  get usedBytes(): number {
    return this.#open().usedBytes();
  }

  /** Writes the parts as ONE frame if it fits now. Throws FRAME_TOO_LARGE if it can never fit. */
  tryWrite(parts: FrameParts): boolean {
    const native = this.#open();
    try {
      return native.tryWrite(parts);
    } catch (err) {
      throw toChorusError(err);
    }
  }

  /**
   * Writes one frame, waiting for room (backpressure) until `deadline` (Date.now() ms), then rejects with
   * CHORUS_ERR_BACKPRESSURE_TIMEOUT. The parts are copied only when room appears: do not modify them
   * until the promise settles.
   */
  write(parts: FrameParts, deadline: number): Promise<void> {
    try {
      if (this.#waitingWrites === 0 && this.tryWrite(parts)) return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
    this.#waitingWrites++;
    const previous = this.#writeTail;
    const mine = this.#writeAfter(previous, parts, deadline).finally(() => this.#waitingWrites--);
    // The next writer waits for BOTH: if `mine` times out first, it must still not overtake `previous`.
    this.#writeTail = Promise.allSettled([previous, mine]);
    return mine;
  }

  async #writeAfter(previous: Promise<unknown>, parts: FrameParts, deadline: number): Promise<void> {
    const timeout = () => this.#backpressureTimeout(frameBytesOf(parts));
    await raceDeadline(previous, deadline, timeout);
    const frameBytes = frameBytesOf(parts);
    for (;;) {
      if (this.tryWrite(parts)) return;
      if (Date.now() >= deadline) throw timeout();
      const status = await this.#open().waitForRoom(frameBytes, deadline);
      if (status === WaitStatus.Closed) throw this.#closedError();
    }
  }

  /** Copies the next frame out (freeing its room and waking a blocked writer), or null when empty. */
  tryRead(): Buffer | null {
    const native = this.#open();
    try {
      return native.tryRead();
    } catch (err) {
      throw toChorusError(err);
    }
  }

  /**
   * Ends a pending read()'s wait at once when the ring holds a frame, as its doorbell's event would: the read returns
   * the frame as the promise turns after this call run, not at the event loop's next poll. false: no read waiting, or
   * nothing to read.
   */
  readyNow(): boolean {
    return !this.closed && this.#open().settleWaitIfReady();
  }

  /**
   * The next frame, sleeping (off the JS thread) until one arrives; null once `deadline` passes.
   * One read at a time: the ring has a single consumer.
   */
  async read(deadline: number): Promise<Buffer | null> {
    const ready = this.tryRead();
    if (ready !== null) return ready;
    if (this.#reading) {
      throw new ChorusError(ErrorCodes.SHM, `ring ${this.name} already has a pending read(): it has a single consumer`);
    }
    this.#reading = true;
    try {
      for (;;) {
        if (Date.now() >= deadline) return null;
        const status = await this.#open().waitForData(deadline);
        if (status === WaitStatus.Closed || this.closed) throw this.#closedError();
        const frame = this.tryRead();
        if (frame !== null) return frame;
        if (status === WaitStatus.Timeout) return null;
      }
    } finally {
      this.#reading = false;
    }
  }

  /** Idempotent. Unmaps the segment; pending read()/write() reject with CHORUS_ERR_CONNECTOR_CLOSED. */
  close(): void {
    const native = this.#native;
    this.#native = null;
    native?.close();
  }

  /** Removes the name (owner side). Mappings stay valid until closed; safe to call after close(). */
  unlink(): boolean {
    return ShmRing.unlinkByName(this.name);
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #open(): NativeRing {
    if (this.#native === null) throw this.#closedError();
    return this.#native;
  }

  #closedError(): ChorusError {
    return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, `shared-memory ring ${this.name} is closed`);
  }

  #backpressureTimeout(frameBytes: number): ChorusError {
    return new ChorusError(
      ErrorCodes.BACKPRESSURE_TIMEOUT,
      `no room for a ${frameBytes}-byte frame in ring ${this.name} (${this.capacityBytes} bytes) before the ` +
        `deadline: ` +
        'the consumer is not keeping up; raise the deadline or the ring capacity',
    );
  }
}
