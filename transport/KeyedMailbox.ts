/**
 * The demultiplexer every connector shares: frames arrive on an edge in FIFO order, each tagged with a
 * key `{requestId}_{stageId}_{seq}`; consumers ask for keys in whatever order they need them.
 * A frame that arrives before its get() is kept until asked; a get() that comes first waits (one timer,
 * no polling) until its frame arrives or its deadline passes.
 *
 * Bounded memory: kept bytes count against a limit. Producers ask waitForRoom() before adding; it holds
 * them while the kept bytes are over the limit, unless some get() is waiting (the frame it wants may be
 * behind the kept ones, and holding the producer then would deadlock until the deadline).
 */
import { ChorusError, ErrorCodes } from '../src/common/errors.ts';
import { onDeadline } from '../src/common/deadline.ts';
import { requestIdOfKey } from './Connector.ts';

const REMEMBERED_CLEANUPS = 4096;

/** Resolves/rejects like `promise`, or rejects with `onTimeout()` at the deadline, whichever is first. */
export function raceDeadline<T>(promise: Promise<T>, deadline: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = onDeadline(deadline, () => reject(onTimeout()));
    promise.then(
      (v) => {
        cancel();
        resolve(v);
      },
      (e: unknown) => {
        cancel();
        reject(e);
      },
    );
  });
}

interface PendingGet {
  resolve(frame: Uint8Array): void;
  reject(err: Error): void;
  cancelTimer(): void;
}

interface RoomWaiter {
  admits(): boolean;
  resolve(): void;
  reject(err: Error): void;
  cancelTimer(): void;
}

export class KeyedMailbox {
  readonly #label: string;
  readonly #kept = new Map<string, Uint8Array>();
  #keptBytes = 0;
  readonly #pending = new Map<string, PendingGet>();
  // Request ids already cleaned up: their late frames are dropped instead of kept forever.
  readonly #cleaned = new Set<string>();
  readonly #roomWaiters = new Set<RoomWaiter>();
  // Keys already handed out, per live request: a second frame under one of them is a duplicate even after the
  // first was consumed. Forgotten at cleanup(), which the adapter calls when the request's streams end.
  readonly #delivered = new Map<string, Set<string>>();
  // Requests whose stream broke (a duplicate arrived): their gets fail with this error instead of timing out.
  readonly #broken = new Map<string, ChorusError>();
  #closed = false;

  /** `label` names the edge in error messages ("talker#0->code2wav#0"). */
  constructor(label: string) {
    this.#label = label;
  }

  /** What it holds now: frames kept for a get to come (and their bytes), and gets waiting for their frame. */
  held(): { readonly keptFrames: number; readonly keptBytes: number; readonly pendingGets: number } {
    return { keptFrames: this.#kept.size, keptBytes: this.#keptBytes, pendingGets: this.#pending.size };
  }

  /**
   * Hands a frame to its waiting get() or keeps it. Returns false when it was dropped (mailbox closed,
   * or its request was cleaned up). A second frame for a key still kept is a producer bug: thrown.
   */
  deliver(key: string, frame: Uint8Array): boolean {
    const requestId = requestIdOfKey(key);
    if (this.#closed || this.#cleaned.has(requestId)) return false;
    if (this.#kept.has(key) || this.#delivered.get(requestId)?.has(key)) {
      const err = new ChorusError(
        ErrorCodes.CHUNK_SEQUENCE,
        `duplicate frame for key ${key} on edge ${this.#label}: the producer sent a chunk twice`,
      );
      this.#break(requestId, err);
      throw err;
    }
    const delivered = this.#delivered.get(requestId) ?? new Set<string>();
    delivered.add(key);
    this.#delivered.set(requestId, delivered);
    const waiter = this.#pending.get(key);
    if (waiter !== undefined) {
      this.#pending.delete(key);
      waiter.cancelTimer();
      waiter.resolve(frame);
      return true;
    }
    this.#kept.set(key, frame);
    this.#keptBytes += frame.byteLength;
    return true;
  }

  /** The frame for `key`; rejects CHORUS_ERR_CHUNK_TIMEOUT at the deadline (Date.now() ms). */
  get(key: string, deadline: number): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const frame = this.#kept.get(key);
    if (frame !== undefined) {
      this.#kept.delete(key);
      this.#keptBytes -= frame.byteLength;
      this.#wakeRoomWaiters();
      return Promise.resolve(frame);
    }
    const broken = this.#broken.get(requestIdOfKey(key));
    if (broken) return Promise.reject(broken);
    if (this.#cleaned.has(requestIdOfKey(key))) {
      return Promise.reject(
        new ChorusError(
          ErrorCodes.REQUEST_CANCELLED,
          `request of key ${key} was already cleaned up on edge ${this.#label}`,
        ),
      );
    }
    if (this.#pending.has(key)) {
      return Promise.reject(
        new ChorusError(ErrorCodes.CHUNK_SEQUENCE, `a get() is already pending for key ${key} on edge ${this.#label}`),
      );
    }
    if (Date.now() >= deadline) return Promise.reject(this.#timeoutError(key));
    const promise = new Promise<Uint8Array>((resolve, reject) => {
      const cancelTimer = onDeadline(deadline, () => {
        this.#pending.delete(key);
        reject(this.#timeoutError(key));
      });
      this.#pending.set(key, { resolve, reject, cancelTimer });
    });
    this.#wakeRoomWaiters(); // a waiting consumer lifts the kept-bytes limit
    return promise;
  }

  /** Whether a producer may add a `frameBytes` frame now under `limitBytes` (see waitForRoom). */
  admits(frameBytes: number, limitBytes: number): boolean {
    return this.#keptBytes === 0 || this.#keptBytes + frameBytes <= limitBytes || this.#pending.size > 0;
  }

  /**
   * Resolves when a producer may add a `frameBytes` frame under `limitBytes` of kept bytes: the mailbox
   * is empty, or the frame fits, or some get() is waiting. Rejects BACKPRESSURE_TIMEOUT at the deadline.
   */
  waitForRoom(frameBytes: number, limitBytes: number, deadline: number): Promise<void> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const admits = (): boolean => this.admits(frameBytes, limitBytes);
    if (admits()) return Promise.resolve();
    if (Date.now() >= deadline) return Promise.reject(this.#backpressureError(frameBytes, limitBytes));
    return new Promise<void>((resolve, reject) => {
      const waiter: RoomWaiter = {
        admits,
        resolve,
        reject,
        cancelTimer: onDeadline(deadline, () => {
          this.#roomWaiters.delete(waiter);
          reject(this.#backpressureError(frameBytes, limitBytes));
        }),
      };
      this.#roomWaiters.add(waiter);
    });
  }

  /** Drops kept frames of the request and rejects its pending gets with CHORUS_ERR_REQUEST_CANCELLED. */
  cleanup(requestId: string): void {
    const prefix = `${requestId}_`;
    for (const [key, frame] of this.#kept) {
      if (!key.startsWith(prefix)) continue;
      this.#kept.delete(key);
      this.#keptBytes -= frame.byteLength;
    }
    for (const [key, waiter] of this.#pending) {
      if (!key.startsWith(prefix)) continue;
      this.#pending.delete(key);
      waiter.cancelTimer();
      waiter.reject(
        new ChorusError(ErrorCodes.REQUEST_CANCELLED, `request ${requestId} was cleaned up while waiting for ${key}`),
      );
    }
    this.#delivered.delete(requestId);
    this.#broken.delete(requestId);
    this.#cleaned.add(requestId);
    if (this.#cleaned.size > REMEMBERED_CLEANUPS) {
      this.#cleaned.delete(this.#cleaned.values().next().value as string);
    }
    this.#wakeRoomWaiters();
  }

  /**
   * Idempotent. Rejects pending gets and room waits with `reason` (default CHORUS_ERR_CONNECTOR_CLOSED),
   * drops kept frames; later calls reject with CHORUS_ERR_CONNECTOR_CLOSED.
   */
  close(reason?: ChorusError): void {
    if (this.#closed) return;
    this.#closed = true;
    const err = reason ?? this.#closedError();
    for (const waiter of this.#pending.values()) {
      waiter.cancelTimer();
      waiter.reject(err);
    }
    for (const waiter of this.#roomWaiters) {
      waiter.cancelTimer();
      waiter.reject(err);
    }
    this.#pending.clear();
    this.#roomWaiters.clear();
    this.#kept.clear();
    this.#keptBytes = 0;
  }

  /** Fails the request's pending and future gets with `err` (until cleanup). */
  #break(requestId: string, err: ChorusError): void {
    this.#broken.set(requestId, err);
    const prefix = `${requestId}_`;
    for (const [key, waiter] of this.#pending) {
      if (!key.startsWith(prefix)) continue;
      this.#pending.delete(key);
      waiter.cancelTimer();
      waiter.reject(err);
    }
  }

  #wakeRoomWaiters(): void {
    for (const waiter of this.#roomWaiters) {
      if (!waiter.admits()) continue;
      this.#roomWaiters.delete(waiter);
      waiter.cancelTimer();
      waiter.resolve();
    }
  }

  #closedError(): ChorusError {
    return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, `edge ${this.#label} is closed`);
  }

  #timeoutError(key: string): ChorusError {
    return new ChorusError(
      ErrorCodes.CHUNK_TIMEOUT,
      `no frame for key ${key} on edge ${this.#label} before the deadline: the producer is late, stalled or gone`,
    );
  }

  #backpressureError(frameBytes: number, limitBytes: number): ChorusError {
    return new ChorusError(
      ErrorCodes.BACKPRESSURE_TIMEOUT,
      `no room for a ${frameBytes}-byte frame on edge ${this.#label} (${this.#keptBytes}/${limitBytes} bytes ` +
        `unclaimed) ` +
        'before the deadline: the consumer is not calling get(); raise the deadline or the edge capacity',
    );
  }
}
