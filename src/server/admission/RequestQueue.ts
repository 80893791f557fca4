/**
 * Admission of requests into the engine: at most maxRunning generate() calls in flight; beyond that a request waits
 * in FIFO order for up to maxWaitMs with at most maxQueued others; beyond the queue, or past the wait, it is
 * refused with CHORUS_ERR_RATE_LIMITED (HTTP 429, Retry-After), which OpenAI clients retry by themselves. Load is
 * never a crash or a 5xx, and a short burst is served instead of refused.
 *
 * With the graph's `admission:` bounds (max_queue_ms, slo_ttfp_ms) a request is also refused at once when the
 * estimate says it would start or first answer too late (src/server/admission/admissionDecision.ts): its wait in
 * this line (from how long slots are held lately) plus the engine's estimate. The counts stay a hard cap.
 *
 * Below the count, the requests that may run at once adapt to their measured first packets and underruns
 * (RunningLimit.ts, PlaybackWatch.ts): with a first-packet bound (slo_ttfp_ms, or the measured one of the default
 * `max_queue_ms: measured`), a request beyond the learned limit is refused at once, not lined up: the limit is where
 * the admitted first packets stay within it and their audio keeps up.
 */
import type { FirstOutputEstimate } from '../../common/engine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { AdmissionSettings } from '../../common/graph.ts';
import { decideAdmission } from './admissionDecision.ts';
import { resolveSlo, runningLimitBoundMs } from './measuredSlo.ts';
import { RunningLimit } from './RunningLimit.ts';
import { serverMetrics } from '../metrics/metrics.ts';

export interface RequestQueueLimits {
  readonly maxRunning: number;
  readonly maxQueued: number;
  readonly maxWaitMs: number;
}

/** The latency bounds and the engine's estimate, read at each admission (a hot reload may change the bounds). */
export interface LatencyGate {
  slo(): AdmissionSettings | undefined;
  estimate(): FirstOutputEstimate | null;
  /** chunk_policy.chunk_timeout_ms: a measured bound stays within a third of it (measuredSlo.ts). */
  chunkTimeoutMs(): number;
}

/** A refusal that knows when to come back: the Retry-After of its 429 (or the seconds its error event names). */
export class RateLimitedError extends ChorusError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(ErrorCodes.RATE_LIMITED, message);
  }
}

/** Weight of a new slot-hold sample (exponential moving average), as the router's rates. */
const HOLD_SMOOTHING = 0.3;

/** What a granted slot remembers for the running limit: when, under which limit, and its first packet's bound. */
interface Grant {
  readonly grantedAtMs: number;
  readonly generation: number;
  /**
   * The most requests running at once since it was granted, itself included: those admitted after it share its steps
   * too (a burst's first request waits as long as its last).
   */
  peakRunning: number;
  readonly boundMs: number;
  /** Its first packet, then an underrun, were learned from (each once). */
  firstPacketSeen: boolean;
  underrunSeen: boolean;
}

interface Waiter {
  readonly enqueuedAtMs: number;
  readonly boundMs: number | null;
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

  /** How long a slot is held lately (ms), for the wait in line; null until one was released. */
  #holdMs: number | null = null;
  /** Requests that may run at once, from their first packets (RunningLimit.ts); maxRunning is its ceiling. */
  readonly #limit: RunningLimit;
  /** Slots the limit learns from (a bound was known at their grant), until released. */
  readonly #grants = new Map<() => void, Grant>();

  constructor(
    limits: RequestQueueLimits,
    private readonly gate: LatencyGate | null = null,
  ) {
    this.#limits = limits;
    this.#limit = new RunningLimit(limits.maxRunning);
  }

  /** Requests that may run now: maxRunning, or less once first packets were late (RunningLimit.ts). */
  get runningLimit(): number {
    return this.gate?.slo()?.runningLimit === 'fixed' ? this.#limits.maxRunning : this.#limit.limit;
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
   * Seconds until a slot is likely free for a request tryAcquire() just turned away: at the learned running limit,
   * about a hold over the limit (slots free that often); at the count, the line's longest wait (retryAfterSeconds).
   */
  get busyRetryAfterSeconds(): number {
    return this.#overLimitNow() ? this.#overLimitSeconds() : this.retryAfterSeconds;
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

  /**
   * The refusal of a request that would start or first answer later than the graph's `admission:` bounds, or null
   * (no bounds, or within them). `wantsAudio`: its first packet is audio. `waits`: it would wait in line for a slot
   * (a Realtime response does not: it gets a slot now or a refusal). The caller that refuses counts it
   * (chorus_latency_refusals_total): a held voice answer not started early is no refusal.
   */
  latencyRefusal(wantsAudio: boolean, waits: boolean): RateLimitedError | null {
    return this.#check(wantsAudio, waits).refusal;
  }

  /** The latency refusal (latencyRefusal) and the bound the running limit holds its first packet to, at once. */
  #check(wantsAudio: boolean, waits: boolean): { refusal: RateLimitedError | null; boundMs: number | null } {
    const settings = this.gate?.slo();
    if (!settings || (settings.maxQueueMs === null && settings.sloTtfpMs === null))
      return { refusal: null, boundMs: null };
    const engine = this.gate!.estimate();
    const context = { wantsAudio, chunkTimeoutMs: this.gate!.chunkTimeoutMs() };
    const lineWaitMs = waits ? this.#lineWaitMs() : 0;
    const slo = resolveSlo(settings, engine, context);
    const boundMs = runningLimitBoundMs(settings, engine, context);
    const decision = decideAdmission({ slo, engine, lineWaitMs, wantsAudio });
    if (decision.admit) return { refusal: null, boundMs };
    const seconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
    const refusal = new RateLimitedError(
      `the server is too busy to serve this request in time (${decision.reason}): retry after ${seconds} s`,
      seconds,
    );
    return { refusal, boundMs };
  }

  /**
   * A slot now, or null when the running limit is reached (no waiting: a Realtime response.create answers at once).
   * `wantsAudio`: its first packet is audio (the bound the running limit learns against; firstPacket()).
   */
  tryAcquire(wantsAudio = false): (() => void) | null {
    if (this.#closedReason !== null) throw this.#shuttingDown();
    return this.#take(this.#check(wantsAudio, false).boundMs);
  }

  #take(boundMs: number | null): (() => void) | null {
    if (this.#running >= this.runningLimit) return null;
    this.#running++;
    serverMetrics.queueWaitSeconds.observe(0);
    return this.#releaser(boundMs);
  }

  /**
   * A slot, after waiting in line if need be; rejects with CHORUS_ERR_RATE_LIMITED when the line is full or slow, or
   * at once when the estimate says it would start or first answer too late (latencyRefusal), or when the running
   * limit learned from first packets is reached below maxRunning (a line there would only add to the lateness).
   */
  acquire(wantsAudio = false): Promise<() => void> {
    const slot = this.admit(wantsAudio);
    return typeof slot === 'function' ? Promise.resolve(slot) : slot;
  }

  /**
   * acquire(), but a slot granted at once is handed back as it is, not in a promise: the caller starts its request in
   * the same turn, so the engine counts it before the next admission is decided. Awaited, a burst whose bodies were
   * parsed in one turn ran every acquire before any request reached the engine, and was admitted whole on an idle
   * engine's estimate (24 chats of 200-370 ms against a 68 ms bound, none refused).
   */
  admit(wantsAudio = false): (() => void) | Promise<() => void> {
    if (this.#closedReason !== null) return Promise.reject(this.#shuttingDown());
    // At the learned limit it is refused whatever the estimate says: asked first, the estimate would cost each of the
    // refusals under overload (three in four at 4x capacity) a pass over the engine's instances.
    if (this.#overLimitNow()) {
      serverMetrics.latencyRefusals.inc();
      return Promise.reject(this.#overLimit());
    }
    const { refusal, boundMs } = this.#check(wantsAudio, true);
    if (refusal) {
      serverMetrics.latencyRefusals.inc();
      return Promise.reject(refusal);
    }
    const now = this.#take(boundMs);
    if (now) return now;
    if (this.#overLimitNow()) {
      serverMetrics.latencyRefusals.inc();
      return Promise.reject(this.#overLimit());
    }
    if (this.#waiting.length >= this.#limits.maxQueued) return Promise.reject(this.#refusal('the queue is full'));
    return new Promise((grant, refuse) => {
      const waiter: Waiter = { enqueuedAtMs: performance.now(), boundMs, grant, refuse, timer: null };
      waiter.timer = setTimeout(() => {
        this.#remove(waiter);
        refuse(this.#refusal(`no slot within ${this.#limits.maxWaitMs} ms`));
      }, this.#limits.maxWaitMs);
      this.#waiting.push(waiter);
      serverMetrics.queueDepth.set(this.#waiting.length);
    });
  }

  /**
   * The request holding `slot` sent its first packet now (its first audio when it asked for audio, else its first
   * text): the running limit learns whether it came within its bound (RunningLimit.ts). Once per slot.
   */
  firstPacket(slot: () => void): void {
    const grant = this.#grants.get(slot);
    if (!grant || grant.firstPacketSeen) return;
    grant.firstPacketSeen = true;
    this.#learn(grant, performance.now() - grant.grantedAtMs > grant.boundMs);
  }

  /**
   * The spoken answer holding `slot` fell behind its playback (PlaybackWatch.ts): the running limit counts it as
   * late, whenever its first packet came. Once per slot.
   */
  underran(slot: () => void): void {
    const grant = this.#grants.get(slot);
    if (!grant || grant.underrunSeen) return;
    grant.underrunSeen = true;
    this.#learn(grant, true);
  }

  #learn(grant: Grant, late: boolean): void {
    const generation = this.#limit.generation;
    this.#limit.observe({ late, generation: grant.generation, running: grant.peakRunning });
    if (this.#limit.generation === generation) return;
    // Cut: those in line would wait into the lateness the cut answers.
    for (const w of this.#waiting.splice(0)) {
      clearTimeout(w.timer!);
      w.refuse(this.#overLimit());
    }
    serverMetrics.queueDepth.set(0);
  }

  /** Expected wait for a slot: the slots turn over maxRunning per hold time, and the line ahead goes first. */
  #lineWaitMs(): number {
    if (this.#running < this.#limits.maxRunning || this.#holdMs === null) return 0;
    return ((this.#waiting.length + 1) * this.#holdMs) / this.#limits.maxRunning;
  }

  #releaser(boundMs: number | null): () => void {
    let released = false;
    const grantedAtMs = performance.now();
    const release = (): void => {
      if (released) return;
      released = true;
      this.#grants.delete(release);
      const heldMs = performance.now() - grantedAtMs;
      this.#holdMs = this.#holdMs === null ? heldMs : this.#holdMs + HOLD_SMOOTHING * (heldMs - this.#holdMs);
      // The slot passes to the oldest waiter unless the limit was cut below what runs.
      const next = this.#running <= this.runningLimit ? this.#waiting.shift() : undefined;
      if (!next) {
        this.#running--;
        if (this.#running === 0) for (const idle of this.#idleWaiters.splice(0)) idle();
        return;
      }
      // The slot passes straight to the oldest waiter: the running count stays the same.
      clearTimeout(next.timer!);
      serverMetrics.queueDepth.set(this.#waiting.length);
      serverMetrics.queueWaitSeconds.observe((performance.now() - next.enqueuedAtMs) / 1000);
      next.grant(this.#releaser(next.boundMs));
    };
    const generation = this.#limit.generation;
    for (const other of this.#grants.values()) other.peakRunning = Math.max(other.peakRunning, this.#running);
    if (boundMs !== null)
      this.#grants.set(release, {
        grantedAtMs,
        generation,
        peakRunning: this.#running,
        boundMs,
        firstPacketSeen: false,
        underrunSeen: false,
      });
    return release;
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

  /** Every slot below the learned limit is taken, and the limit is below the count (where a line would form). */
  #overLimitNow(): boolean {
    return this.#running >= this.runningLimit && this.#running < this.#limits.maxRunning;
  }

  /** Refused at the running limit learned from first packets: a slot frees about every hold / limit. */
  #overLimit(): RateLimitedError {
    const limit = this.runningLimit;
    const seconds = this.#overLimitSeconds();
    return new RateLimitedError(
      `the server is too busy to serve this request in time (${this.#running} running, at the ${limit} whose first ` +
        `packets lately came within the bound): retry after ${seconds} s`,
      seconds,
    );
  }

  #overLimitSeconds(): number {
    return Math.max(1, Math.ceil((this.#holdMs ?? 0) / this.runningLimit / 1000));
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
