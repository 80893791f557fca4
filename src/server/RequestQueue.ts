/**
 * Admission of requests into the engine: at most maxRunning generate() calls in flight; beyond that a request waits
 * in FIFO order for up to maxWaitMs with at most maxQueued others; beyond the queue, or past the wait, it is
 * refused with CHORUS_ERR_RATE_LIMITED (HTTP 429, Retry-After), which OpenAI clients retry by themselves. Load is
 * never a crash or a 5xx, and a short burst is served instead of refused.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { serverMetrics } from './metrics.ts';

export interface RequestQueueLimits {
  readonly maxRunning: number;
  readonly maxQueued: number;
  readonly maxWaitMs: number;
}

interface Waiter {
  readonly enqueuedAtMs: number;
  readonly grant: (release: () => void) => void;
  readonly refuse: (err: ChorusError) => void;
  timer: NodeJS.Timeout | null;
}

export class RequestQueue {
  readonly #limits: RequestQueueLimits;
  #running = 0;
  readonly #waiting: Waiter[] = [];
  #idleWaiters: (() => void)[] = [];
  /** Set by drain(): every acquire is refused with CHORUS_ERR_SHUTTING_DOWN. */
  #closedReason: string | null = null;

  constructor(limits: RequestQueueLimits) {
    this.#limits = limits;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  /** Drain has begun: nothing new is admitted. */
  get closed(): boolean {
    return this.#closedReason !== null;
  }

  /** Seconds a refused client should wait before retrying (the Retry-After header). */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.#limits.maxWaitMs / 1000));
  }

  /**
   * Stops admitting (acquire throws CHORUS_ERR_SHUTTING_DOWN, waiters are refused) and resolves once every running
   * request has released its slot.
   */
  drain(reason: string): Promise<void> {
    this.#closedReason = reason;
    for (const w of this.#waiting.splice(0)) {
      clearTimeout(w.timer!);
      w.refuse(this.#shuttingDown());
    }
    serverMetrics.queueDepth.set(0);
    if (this.#running === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** A slot now, or null when every slot is taken (no waiting: a Realtime response.create answers at once). */
  tryAcquire(): (() => void) | null {
    if (this.#closedReason !== null) throw this.#shuttingDown();
    if (this.#running >= this.#limits.maxRunning) return null;
    this.#running++;
    serverMetrics.queueWaitSeconds.observe(0);
    return this.#releaser();
  }

  /** A slot, after waiting in line if need be; rejects with CHORUS_ERR_RATE_LIMITED when the line is full or slow. */
  acquire(): Promise<() => void> {
    const now = this.tryAcquire();
    if (now) return Promise.resolve(now);
    if (this.#waiting.length >= this.#limits.maxQueued) return Promise.reject(this.#refusal('the queue is full'));
    return new Promise((grant, refuse) => {
      const waiter: Waiter = { enqueuedAtMs: performance.now(), grant, refuse, timer: null };
      waiter.timer = setTimeout(() => {
        this.#remove(waiter);
        refuse(this.#refusal(`no slot within ${this.#limits.maxWaitMs} ms`));
      }, this.#limits.maxWaitMs);
      this.#waiting.push(waiter);
      serverMetrics.queueDepth.set(this.#waiting.length);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.shift();
      if (!next) {
        this.#running--;
        if (this.#running === 0) for (const idle of this.#idleWaiters.splice(0)) idle();
        return;
      }
      // The slot passes straight to the oldest waiter: the running count stays the same.
      clearTimeout(next.timer!);
      serverMetrics.queueDepth.set(this.#waiting.length);
      serverMetrics.queueWaitSeconds.observe((performance.now() - next.enqueuedAtMs) / 1000);
      next.grant(this.#releaser());
    };
  }

  #remove(waiter: Waiter): void {
    const i = this.#waiting.indexOf(waiter);
    if (i >= 0) this.#waiting.splice(i, 1);
    serverMetrics.queueDepth.set(this.#waiting.length);
  }

  #shuttingDown(): ChorusError {
    return new ChorusError(
      ErrorCodes.SHUTTING_DOWN,
      `the server is shutting down (${this.#closedReason}): send new requests to another server or retry later`,
    );
  }

  #refusal(why: string): ChorusError {
    const { maxRunning, maxQueued } = this.#limits;
    return new ChorusError(
      ErrorCodes.RATE_LIMITED,
      `the server is busy (${maxRunning} requests running, ${maxQueued} waiting: ${why}); ` +
        `retry after ${this.retryAfterSeconds} s`,
    );
  }
}
