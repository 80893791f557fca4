/**
 * Speech prefilled while the user talks (server_vad sessions). During a turn, every PREFILL_EVERY_MS of new audio
 * the session sends the engine a prefill-only request: the conversation as the answer will see it, with the turn's
 * audio so far as the user item. The audio encoder encodes only the windows it has not seen (AudioWindows), and the
 * Thinker computes only what the previous prefill did not (its prefix cache: ThinkerPrefixCache); the KV stays in
 * the cache, owned by the session's key. When the turn ends, the answer carries the same key and starts from the
 * longest prefix with equal inputs: only the last window or two of speech and the assistant header are left to
 * encode and prefill.
 *
 * One prefill at a time per session (the next waits for the last to finish), none while an answer is running.
 * Correctness never rests on this class: the Thinker compares every reused position's inputs, so a conversation
 * edited meanwhile only means less reuse. close() frees everything (the in-flight prefill and the retained KV).
 */
import type { Engine, GenerateRequest, RequestHandle } from '../common/engine.ts';
import type { FastifyBaseLogger } from 'fastify';

/** One attention window of the generated audio encoder (64 mel frames): a prefill per new window of speech. */
export const PREFILL_EVERY_MS = 640;

/**
 * Prefills in flight across the server. A prefill only saves time; with many sessions speaking at once, every one of
 * them would cost the event loop (the turn's audio copied and probed) and the encoder and Thinker work that answers
 * need. Beyond `max` a session skips its prefill and tries again on its next append; the answer then reuses less.
 */
export class PrefillSlots {
  #inFlight = 0;

  constructor(readonly max = 1) {}

  tryTake(): boolean {
    if (this.#inFlight >= this.max) return false;
    this.#inFlight++;
    return true;
  }

  give(): void {
    this.#inFlight--;
  }
}

export class VoicePrefill {
  #inFlight: RequestHandle | null = null;
  /** A prefill asked for (now()) while one was in flight: started when that one ends. */
  #queued: (() => void) | null = null;
  #prefilledMs = 0;
  #count = 0;
  #closed = false;

  constructor(
    private readonly engine: Engine & { releasePrefix(key: string): void },
    private readonly slots: PrefillSlots,
    /** The session's prefix key. */
    readonly key: string,
    private readonly log: FastifyBaseLogger,
    /** The session's cache salt now (GenerateRequest.cacheSalt): a prefill must name its blocks as the answer will. */
    private readonly cacheSalt: () => string | undefined = () => undefined,
  ) {}

  /** An engine that can retain prefixes gets a VoicePrefill; others (test doubles) none. */
  static for(
    engine: Engine,
    slots: PrefillSlots,
    key: string,
    log: FastifyBaseLogger,
    cacheSalt?: () => string | undefined,
  ): VoicePrefill | null {
    return canRetain(engine) ? new VoicePrefill(engine, slots, key, log, cacheSalt) : null;
  }

  /**
   * Audio arrived during a turn: `bufferedMs` of it is in the input buffer. `render` gives the messages of the answer
   * to come with that audio as the user's item (null: nothing to prefill now).
   */
  onAudio(bufferedMs: number, render: () => GenerateRequest['messages'] | null): void {
    if (this.#closed || this.#inFlight || bufferedMs - this.#prefilledMs < PREFILL_EVERY_MS) return;
    this.#start(bufferedMs, render);
  }

  /**
   * Something the answer will see arrived (a camera frame): prefill now, unpaced, or as soon as the prefill in
   * flight ends. `bufferedMs` gives the turn's audio in the input buffer then (0: none).
   */
  now(bufferedMs: () => number, render: () => GenerateRequest['messages'] | null): void {
    if (this.#closed) return;
    if (this.#inFlight) {
      this.#queued = () => this.#start(bufferedMs(), render);
      return;
    }
    this.#start(bufferedMs(), render);
  }

  #start(bufferedMs: number, render: () => GenerateRequest['messages'] | null): void {
    if (!this.slots.tryTake()) return;
    const messages = render();
    if (!messages) return this.slots.give();
    let handle: RequestHandle;
    const cacheSalt = this.cacheSalt();
    try {
      handle = this.engine.generate({
        requestId: `${this.key}-prefill-${this.#count++}`,
        messages,
        modalities: ['text'],
        prefix: { key: this.key, prefillOnly: true },
        ...(cacheSalt !== undefined ? { cacheSalt } : {}),
      });
    } catch (err) {
      // The answer will meet the same problem and report it; a prefill only saves time.
      this.log.debug({ err, key: this.key }, 'voice prefill not started');
      return this.slots.give();
    }
    this.#inFlight = handle;
    this.#prefilledMs = bufferedMs;
    handle.events.subscribe({
      next: (e) => {
        if (e.type !== 'done') return;
        this.slots.give();
        if (this.#inFlight !== handle) return;
        this.#inFlight = null;
        const queued = this.#queued;
        this.#queued = null;
        if (!this.#closed) queued?.();
      },
    });
  }

  /** The turn's audio is gone (committed or cleared): the next turn starts counting from zero. */
  turnEnded(): void {
    this.#prefilledMs = 0;
  }

  /** The turn was dropped (buffer cleared, turn detection off, no answer will come): free what is held. */
  release(): void {
    this.#inFlight?.cancel('the voice turn was dropped');
    this.#inFlight = null;
    this.#queued = null;
    this.#prefilledMs = 0;
    this.engine.releasePrefix(this.key);
  }

  close(): void {
    if (this.#closed) return;
    this.release();
    this.#closed = true;
  }
}

function canRetain(engine: Engine): engine is Engine & { releasePrefix(key: string): void } {
  return typeof engine.releasePrefix === 'function';
}
