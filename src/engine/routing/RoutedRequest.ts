/**
 * One routed request's hold on the queues the Router counted it in, and what its answers teach: the RouteTicket that
 * Router.route() hands back (Router.ts), which the request record keeps, tells what happens (first token, first
 * audio, an encoder finished) and releases when the request ends however it ends.
 *
 * Its rows count on its encoder instances from admission until each one's `finished` (EncoderQueues.ts); its prompt
 * counts on its Thinker's queue (QueuedPrefill.ts) from admission when it has no encoder work, else from its last
 * encoder's `finished`, until its first token or its end. Until then the Thinker does not hold a step for it, so a
 * request routed meanwhile does not wait for it. Its first token teaches its Thinker's prefill rate, each `finished`
 * its encoder's rate, and its first packets and end the admission estimate's learners (LiveCost.ts, SeatWait.ts);
 * when it ends its prompt's blocks are predicted held on its Thinker (KvIndex.predict). Each of these happens once:
 * a report after its first token or its end changes nothing.
 */
import type { StageSpec } from '../../common/graph.ts';
import type { Modality } from '../../common/modality.ts';
import { diagnostics } from '../../common/diagnostics.ts';
import { modelRoot } from '../../sched/blockNames.ts';
import type { EncoderQueues, EncoderWork } from './EncoderQueues.ts';
import { reusableBlocks, type KvIndex, type NamedPrompt, type Naming } from './KvIndex.ts';
import type { LearnedRates } from './LearnedRates.ts';
import type { LiveCost, LiveSample, PathWaitMs } from './LiveCost.ts';
import type { QueuedCharge, QueuedPrefill } from './QueuedPrefill.ts';
import type { SeatWait } from './SeatWait.ts';

/**
 * Positions (its own and those queued ahead of it) a request's prefill must compute to teach its Thinker's rate. A
 * first token also costs a fixed part (the add, a step, the token's way back: ~5-10 ms here) that a short prefill
 * cannot tell from its positions: a conversation's turn that computes 16 new positions on a cached history would
 * teach its instance a rate several times too low, and the next turn would leave the instance that holds its history.
 */
export const MIN_RATE_SAMPLE_POSITIONS = 128;

/** What a routed request is counted in and teaches: the Router's own, shared by all its requests. */
export interface RouteBooks {
  readonly queued: QueuedPrefill;
  /** Thinker instance -> prefill tokens per second. */
  readonly prefillRates: LearnedRates;
  readonly encoders: EncoderQueues;
  readonly kv: KvIndex;
  /** The admission estimate's learners (Router.estimate). */
  readonly liveCost: LiveCost;
  readonly seats: SeatWait;
}

/** What the Router chose and predicted for the request. */
export interface RouteFacts {
  readonly requestId: string;
  readonly thinker: string;
  /** The stage of its Thinker (how its prefix cache names blocks). */
  readonly entry: StageSpec;
  /** Its whole prompt's positions. */
  readonly promptTokens: number;
  /** Prompt positions its prefix cache holds on its Thinker, when it was admitted. */
  readonly cachedPositions: number;
  /** Its prompt as the KV index names it: when it ends, its blocks are in its Thinker's cache. */
  readonly named: NamedPrompt;
  /** Encoder instance -> its rows for this request and the rows queued there ahead of them (EncoderQueues.admit). */
  readonly encoders: Map<string, EncoderWork>;
  readonly predictedTtftSeconds: number;
  readonly modality: 'text' | Modality | 'mixed';
  /** Its first packet is audio: it competes until its first audio, not its first text (LiveCost.ts). */
  readonly wantsAudio: boolean;
  /** The steps in progress it waits for, given its predicted first text (stepWait.ts pathWaitMs). */
  readonly pathMs: (predictedMs: number) => PathWaitMs;
}

export class RoutedRequest {
  readonly #books: RouteBooks;
  readonly #facts: RouteFacts;
  readonly #admittedAtMs: number;
  /** Tokens queued on the Thinker ahead of it, when it was admitted. */
  readonly #tokensAhead: number;
  /**
   * What it adds to its Thinker's queue: the positions it will compute (not those cached or computed by a request
   * queued ahead) and its blocks' names. Counted at admission, counted again when it joins the queue (after its
   * encoders), since the requests ahead may have changed.
   */
  #charge: QueuedCharge;
  #encodersDoneAtMs = 0;
  /** Its prompt counts in its Thinker's queue (from admission without encoder work, else from its last `finished`). */
  #queued = false;
  /** Its first token came or it ended: it counts in no queue any more and learns nothing more. */
  #done = false;
  /** What the admission estimate learns from it (LiveCost.ts). */
  readonly #live: LiveSample;

  constructor(books: RouteBooks, facts: RouteFacts) {
    this.#books = books;
    this.#facts = facts;
    this.#tokensAhead = books.queued.tokens(facts.thinker);
    this.#admittedAtMs = Date.now();
    books.seats.admitted(facts.requestId, this.#admittedAtMs);
    // What it will compute: the queue and the learned rate count no position its prefix cache or a request queued
    // ahead of it gives it.
    this.#charge = this.#chargeNow();
    const predictedMs = facts.predictedTtftSeconds * 1000;
    const { wantsAudio } = facts;
    const pathMs = facts.pathMs(predictedMs);
    this.#live = books.liveCost.admit(this.#charge.tokens, this.#admittedAtMs, predictedMs, wantsAudio, pathMs);
    if (facts.encoders.size === 0) this.#enqueue();
  }

  /** Main saw its first text token: its prompt left the queue; learn the Thinker's rate. */
  firstToken(atMs: number): void {
    if (this.#done) return;
    this.#leave();
    this.#books.liveCost.firstToken(this.#live, atMs);
    const prefillMs = atMs - Math.max(this.#admittedAtMs, this.#encodersDoneAtMs);
    const positions = this.#tokensAhead + this.#charge.tokens;
    if (prefillMs > 0 && positions >= MIN_RATE_SAMPLE_POSITIONS)
      this.#books.prefillRates.learn(this.#facts.thinker, (positions * 1000) / prefillMs);
    diagnostics.routeTtft.publish({
      requestId: this.#facts.requestId,
      modality: this.#facts.modality,
      predictedSeconds: this.#facts.predictedTtftSeconds,
      actualSeconds: (atMs - this.#admittedAtMs) / 1000,
    });
  }

  /** Main saw its first audio: learn how long audio follows text (the Talker's and Code2Wav's share). */
  firstAudio(atMs: number): void {
    this.#books.liveCost.firstAudio(this.#live, atMs);
  }

  /** An encoder instance finished its items: its rows left the queue; learn its rate. */
  encoderFinished(instance: string, atMs: number): void {
    const encoders = this.#facts.encoders;
    const work = encoders.get(instance);
    if (this.#done || !work) return;
    encoders.delete(instance);
    this.#books.encoders.finished(instance, work, atMs - this.#admittedAtMs);
    if (encoders.size === 0) this.#enqueue();
    this.#encodersDoneAtMs = Math.max(this.#encodersDoneAtMs, atMs);
  }

  /** It ended: whatever it still counted in the queues leaves them. */
  release(): void {
    this.#books.seats.released(this.#facts.requestId, Date.now());
    this.#leave();
    this.#books.liveCost.release(this.#live);
    const naming = namingOf(this.#facts.entry);
    if (naming) this.#books.kv.predict(this.#facts.thinker, this.#facts.named, Date.now(), naming);
  }

  /**
   * What it would add to its Thinker's queue now (QueuedPrefill.charge): nothing shared without a prefix cache on
   * the stage.
   */
  #chargeNow(): QueuedCharge {
    const { entry, thinker, named, promptTokens, cachedPositions } = this.#facts;
    const naming = namingOf(entry);
    const names = naming ? this.#books.kv.names(named, naming).all() : [];
    const reusable = naming ? reusableBlocks(named, naming.blockPositions) : 0;
    const request = { promptTokens, cachedPositions, names, reusable };
    const tokens = this.#books.queued.charge(thinker, request, naming?.blockPositions ?? 1);
    return { tokens, names };
  }

  /** It joins its Thinker's queue (admitted without encoder work, or its last encoder finished). */
  #enqueue(): void {
    if (this.#queued) return;
    this.#queued = true;
    // Again: requests ahead of it may have joined or left the queue since its admission (while it was encoded).
    this.#charge = this.#chargeNow();
    this.#books.queued.add(this.#facts.thinker, this.#charge);
  }

  #leave(): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#queued) this.#books.queued.remove(this.#facts.thinker, this.#charge);
    this.#queued = false;
    this.#books.encoders.released(this.#facts.encoders);
  }
}

/** How the entry stage's prefix cache names its blocks (as its instances report), or null: it has none. */
function namingOf(entry: StageSpec): Naming | null {
  const cache = entry.engine.prefixCache;
  return cache ? { root: modelRoot(entry.model), blockPositions: cache.blockPositions } : null;
}
