/**
 * A speculative voice answer (server_vad with create_response): started when the VAD first hears the silence that
 * may end the turn, it runs through every stage while the server keeps everything it produces. At speech_stopped
 * the session adopts it (its held events replay at once, then the rest flows live), so the silence_duration_ms the
 * VAD must wait out also pays for the answer's first packet; if the user goes on speaking instead, it is cancelled
 * in every stage and nothing of it ever reaches the client.
 *
 * What must stay true: an adopted answer is the answer the turn would have got without speculation. The session
 * adopts it only when the request it would send now is deep-equal to the one this was started with (the same
 * messages, audio bytes included, and the same generation parameters); otherwise it discards this one and starts
 * afresh. Determinism (greedy or seeded sampling) does the rest.
 *
 * Memory: what is held is what the pipeline makes during the rest of the turn's silence; past MAX_HELD_AUDIO_S of
 * audio (a long silence_duration_ms) the answer is paused, as a slow client's would be, until it is adopted.
 */
import { isDeepStrictEqual } from 'node:util';
import { Observable, type Subscriber, type Subscription } from 'rxjs';
import type { GenerateRequest, OutputEvent, RequestHandle } from '../../common/engine.ts';
import { serverMetrics } from '../metrics/metrics.ts';

/** Held audio beyond which generation waits for the adoption (about 1 MB of pcm at 24 kHz). */
const MAX_HELD_AUDIO_S = 20;

export class HeldAnswer {
  readonly #inner: RequestHandle;
  /** The request as started, minus its id (compared with the one the session would send at speech_stopped). */
  readonly #request: Omit<GenerateRequest, 'requestId'>;
  /** Gives back the admission slot the answer took (whoever holds the answer at its end calls it once). */
  readonly releaseSlot: () => void;
  readonly #subscription: Subscription;
  #held: OutputEvent[] = [];
  #sink: Subscriber<OutputEvent> | null = null;
  #completed = false;
  /** An error the answer ended with while no one was subscribed (handed to the adopter). */
  #failure: { readonly error: unknown } | null = null;
  #settled = false;
  #heldAudioS = 0;
  #paused = false;

  private constructor(inner: RequestHandle, request: GenerateRequest, releaseSlot: () => void) {
    this.#inner = inner;
    // The trace context a response.create names is its own, not part of what is computed.
    const { requestId: _id, traceparent: _parent, ...rest } = request;
    this.#request = rest;
    this.releaseSlot = releaseSlot;
    this.#subscription = inner.events.subscribe({
      next: (e) => (this.#sink ? this.#sink.next(e) : this.#hold(e)),
      error: (error: unknown) => (this.#sink ? this.#sink.error(error) : (this.#failure = { error })),
      complete: () => {
        this.#completed = true;
        this.#sink?.complete();
      },
    });
  }

  #hold(e: OutputEvent): void {
    this.#held.push(e);
    if (e.type !== 'audio') return;
    this.#heldAudioS += e.pcm.length / e.sampleRateHz;
    if (this.#heldAudioS > MAX_HELD_AUDIO_S && !this.#paused) {
      this.#paused = true;
      this.#inner.pause();
    }
  }

  /** Starts `request` held; `releaseSlot` gives back its admission slot when it is discarded. */
  static start(
    generate: (request: GenerateRequest) => RequestHandle,
    request: GenerateRequest,
    releaseSlot: () => void,
  ): HeldAnswer {
    const held = new HeldAnswer(generate(request), request, releaseSlot);
    serverMetrics.voiceSpeculativeAnswersTotal.inc({ result: 'started' });
    return held;
  }

  get requestId(): string {
    return this.#inner.requestId;
  }

  /** Whether `request` (its id aside) is the one this answer was started with. */
  matches(request: GenerateRequest): boolean {
    const { requestId: _id, ...rest } = request;
    return isDeepStrictEqual(rest, this.#request);
  }

  /**
   * The answer is the turn's: a handle whose first subscriber gets every held event at once, then the live ones.
   * The admission slot passes to the caller with it.
   */
  adopt(): RequestHandle {
    this.#settle('confirmed');
    const inner = this.#inner;
    // Generation goes on now; the adopter pauses it again if its client reads slowly (before it subscribes, too).
    if (this.#paused) inner.resume();
    this.#paused = false;
    const events = new Observable<OutputEvent>((subscriber) => {
      const held = this.#held;
      this.#held = [];
      for (const e of held) subscriber.next(e);
      if (this.#failure) subscriber.error(this.#failure.error);
      else if (this.#completed) subscriber.complete();
      else this.#sink = subscriber;
      return () => {
        this.#sink = null;
        this.#subscription.unsubscribe();
      };
    });
    return {
      requestId: inner.requestId,
      prompt: inner.prompt,
      events,
      ...(inner.traceId ? { traceId: inner.traceId } : {}),
      cancel: (reason) => inner.cancel(reason),
      pause: () => inner.pause(),
      resume: () => inner.resume(),
    };
  }

  /** The turn went on (or changed): cancelled in every stage, its slot given back; the client never hears of it. */
  discard(): void {
    if (this.#settled) return;
    this.#settle('discarded');
    this.#subscription.unsubscribe();
    this.#held = [];
    this.#inner.cancel('speculative voice answer discarded: the user went on speaking');
    this.releaseSlot();
  }

  #settle(result: 'confirmed' | 'discarded'): void {
    if (this.#settled) throw new Error(`held answer ${this.requestId} was already adopted or discarded`);
    this.#settled = true;
    serverMetrics.voiceSpeculativeAnswersTotal.inc({ result });
  }
}
