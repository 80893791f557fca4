/**
 * The only file that loads the native addon (native/build/Release/chorus_shm.node, built by `npm install`).
 * It declares the whole native surface; native/src/addon.cc is the other half and must stay in step. Besides the
 * rings, the addon has the KV stores' strided copies (stages/models/AppendKvCache.ts) and the memory they live in
 * (stages/models/KvBufferPool.ts).
 */
import { createRequire } from 'node:module';
import { ChorusError, ErrorCodes, type ErrorCode } from '../../src/common/errors.ts';
import { shippedAsset } from '../../src/common/moduleFile.ts';

/** What a native wait settles with. */
export const WaitStatus = { Ready: 0, Timeout: 1, Closed: 2 } as const;
export type WaitStatus = (typeof WaitStatus)[keyof typeof WaitStatus];

/** One mapping of a single-producer single-consumer ring segment. */
export interface NativeRing {
  readonly name: string;
  /** Data bytes (a multiple of 8); the segment adds a `headerBytes` header page. */
  readonly capacityBytes: number;
  /** Largest frame that can ever fit: capacityBytes - 4 (entries are [u32 len][payload][pad to 8]). */
  readonly maxFrameBytes: number;
  readonly ownerPid: number;
  usedBytes(): number;
  /** Writes the parts as one frame. false = no room now. Throws FRAME_TOO_LARGE if it can never fit. */
  tryWrite(parts: Uint8Array | readonly Uint8Array[]): boolean;
  /** Copies the next frame out and frees its room (waking a sleeping producer), or null when empty. */
  tryRead(): Buffer | null;
  /**
   * Waits on this thread's event loop (the ring's doorbell under uv_poll, native/src/bell.h) until data is
   * available or the Date.now()-based deadline passes.
   */
  waitForData(deadlineMs: number): Promise<WaitStatus>;
  /**
   * Settles a pending waitForData with Ready at once when the ring holds a frame, as its doorbell's event would (the
   * rung byte drained): the waiter's promise turns run before the event loop polls again. false: no wait pending, or
   * the ring is empty.
   */
  settleWaitIfReady(): boolean;
  /** Sleeps on a background thread until a frame of `frameBytes` fits or the deadline passes. */
  waitForRoom(frameBytes: number, deadlineMs: number): Promise<WaitStatus>;
  /** Idempotent. Unmaps; pending waits settle with Closed. Does not unlink the name. */
  close(): void;
}

export interface NativeAddon {
  /** create=true: new segment with O_CREAT|O_EXCL, mode 0600. create=false: attach (capacity ignored). */
  Ring: new (name: string, capacityBytes: number, create: boolean) => NativeRing;
  /** shm_unlink; false when the name did not exist. */
  unlink(name: string): boolean;
  /**
   * This process's ring waits publish their thread, so a producer that wakes one moves it off the producer's core
   * (native/src/ring.h, Ring::PublishReaderThread). Stage processes turn it on while lightly loaded; main never.
   */
  publishReaderThread(on: boolean): void;
  /**
   * Runs `wake`, which wakes thread `tid` (a stage process's add), with `tid` kept off this thread's core meanwhile, so
   * the wake-up places it on another core (Ring::KeepOffThisCore); what `wake` throws is thrown after.
   */
  wakeOffThisCore(tid: number, wake: () => void): void;
  readonly headerBytes: number;
  /**
   * Copies `count` blocks of `blockFloats` floats, block i from src[srcStart + i * srcStride] to
   * dst[dstStart + i * dstStride] (native/src/strided.h). Throws when a block would run past either array.
   */
  copyStrided(
    dst: Float32Array,
    dstStart: number,
    dstStride: number,
    src: Float32Array,
    srcStart: number,
    srcStride: number,
    blockFloats: number,
    count: number,
  ): void;
  /** Sets `count` blocks of `blockFloats` floats, block i at dst[start + i * stride], to value. */
  fillStrided(
    dst: Float32Array,
    start: number,
    stride: number,
    blockFloats: number,
    count: number,
    value: number,
  ): void;
  /**
   * An ArrayBuffer over `bytes` (rounded up to whole pages) of anonymous memory mapped outside V8 (native/src/arena.h):
   * address space only, each page committed by the kernel on its first touch, reading 0 until written. V8 counts its
   * length as external memory once; it is unmapped when the ArrayBuffer is collected. At most 4 GiB (Node's limit).
   * Throws CHORUS_ERR_KV_BUDGET when the address space cannot be had.
   */
  reserveMemory(bytes: number): ArrayBuffer;
  /** Gives the pages of a reserveMemory buffer wholly within the range back to the kernel; they read 0 afterwards. */
  releasePages(buffer: ArrayBuffer, byteOffset: number, byteLength: number): void;
}

const require = createRequire(import.meta.url);
const addonPath = shippedAsset('../../native/build/Release/chorus_shm.node', import.meta.url).pathname;

function load(): NativeAddon {
  try {
    return require(addonPath) as NativeAddon;
  } catch (cause) {
    throw new ChorusError(
      ErrorCodes.SHM,
      `cannot load ${addonPath}: run \`npm install\` (it builds native/ with node-gyp)`,
      {
        cause,
      },
    );
  }
}

export const addon: NativeAddon = load();

const knownCodes = new Set<string>(Object.values(ErrorCodes));

/** Native errors carry a CHORUS_ERR_* `code`; rebuild them as ChorusError so callers can branch on it. */
export function toChorusError(err: unknown): ChorusError {
  if (err instanceof ChorusError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const chorusCode: ErrorCode = typeof code === 'string' && knownCodes.has(code) ? (code as ErrorCode) : ErrorCodes.SHM;
  return new ChorusError(chorusCode, message, { cause: err });
}
