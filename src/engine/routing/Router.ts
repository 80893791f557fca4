/**
 * Modality-aware routing, the mechanism half: which instance of each stage takes a request, by the graph's
 * `routing:` policy. Main tracks what it has sent each instance (prompt tokens not yet answered by a first token,
 * encoder rows not yet finished) and learns each instance's rates from what it sees come back (seconds from
 * admission to an encoder's `finished`, from the rows being ready to the first text token), so no stage reports
 * anything new: a routed request's ticket counts it in and out of the queues and teaches the rates (RoutedRequest.ts;
 * an encoder's queue and rates: EncoderQueues.ts). `ttft` routes by chooseRoute() over that snapshot; least_loaded
 * and round_robin exist for comparison. Every policy's choice gets a predicted TTFT, checked against the actual one at
 * the first token (chorus:route:ttft), and a decision reason (chorus:route:decision). Under `ttft` each Thinker
 * instance is charged only the prompt positions its prefix cache does not hold (KvIndex.ts, from the instances' stats
 * reports), and the queue counts what the chosen instance will compute: under every policy, a queued request is
 * charged its prompt less what the cache holds and what a request queued ahead of it computes for it
 * (QueuedPrefill.ts). What is left here is the choice (route()) and the admission estimate (estimate()).
 */
import { hostname } from 'node:os';
import type { RoutingPolicy, StageSpec } from '../../common/graph.ts';
import { diagnostics } from '../../common/diagnostics.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import type { MediaItem, PreparedPrompt } from '../mediaPrompt.ts';
import { leastLoaded, type InstanceView } from '../pool/StageInstance.ts';
import type { KeyedSpan } from '../../sched/blockNames.ts';
import { blockKeyOf } from '../blockKey.ts';
import { heldItems } from '../heldItems.ts';
import { EncoderQueues } from './EncoderQueues.ts';
import { KvIndex, PREDICTION_MS, type NamedPrompt } from './KvIndex.ts';
import { LearnedRates } from './LearnedRates.ts';
import { LiveCost } from './LiveCost.ts';
import { QueuedPrefill } from './QueuedPrefill.ts';
import { RoutedRequest, type RouteBooks, type RouteFacts } from './RoutedRequest.ts';
import { SeatWait } from './SeatWait.ts';
import { frameStepMs, pathWaitMs } from './stepWait.ts';
import type { FirstOutputEstimate } from '../../common/engine.ts';
import {
  chooseRoute,
  type EcEntry,
  type EcLookup,
  type EncoderLoad,
  type LoadSnapshot,
  type RouteDefaults,
  type RouteItem,
  type ThinkerLoad,
} from './chooseRoute.ts';

/** Assumed until an instance has measured its own (tiny-omni on this class of CPU, one thread per stage). */
export const ROUTE_DEFAULTS: RouteDefaults = {
  prefillTokensPerSecond: 4_000,
  // ~0.15 s per 30 s clip; ~30 ms per 64-row image; a video row as an image row (its encoder is the same ViT)
  secondsPerRow: { audio: 0.000_2, image: 0.000_5, video: 0.000_5 },
  fetchSecondsPerRow: 0.000_002, // a 1 KiB row over loopback Redis
  transferSecondsPerRow: 0.000_02, // a 1 KiB row through Redis to another host: ~50 MB/s with the round trips
};

/**
 * A routed request's hold on the queues it was counted in: the request record keeps it and tells it what
 * happens (first token, an encoder finished), and release() when the request ends however it ends.
 */
export interface RouteTicket {
  /** Main saw the request's first text token: its prompt left the queue; learn the Thinker's rate. */
  firstToken(atMs: number): void;
  /** Main saw the request's first audio: learn how long audio follows text (the Talker's and Code2Wav's share). */
  firstAudio(atMs: number): void;
  /** An encoder instance finished the request's items: its rows left the queue; learn its rate. */
  encoderFinished(instance: string, atMs: number): void;
  /** The request ended: whatever it still counted in the queues leaves them. */
  release(): void;
}

/**
 * Keeps the books of a choice: counts the request in the queues it was routed to and returns its ticket (null: no
 * Thinker among the stages). Called once, after the request's adds are sent: the books are main's own (nothing a stage
 * reads), so the entry stage's add does not wait for them; the prediction they keep was made at the choice, with the
 * instances' in-flight requests as they were before this one's adds (where there was no choice, one ready instance
 * and no media, it is made here: what it reads is the same then).
 */
export type RouteBooking = () => RouteTicket | null;

/** The instance chosen per stage, and how to book what the choice counts. */
export interface Routed {
  readonly chosen: Map<string, InstanceView>;
  readonly book: RouteBooking;
  /**
   * The media items not to encode: the chosen Thinker's prefix cache holds all their positions as main knows it
   * (KvIndex: its reports and predictions, which may be stale; heldItems.ts). Empty when `skipHeld` was false.
   */
  readonly held: ReadonlySet<number>;
}

export class Router {
  readonly #turn = new Map<string, number>();
  /**
   * What main counts on each instance and learns from what comes back, shared by the requests it routed (their
   * tickets, RoutedRequest.ts): the Thinkers' queues and prefill rates, the encoders' (EncoderQueues.ts), what each
   * Thinker's prefix cache holds, and for the admission estimate (estimate()) a typical prompt, what predictions miss
   * per live request (LiveCost.ts) and how long a newcomer would wait for a batch seat (SeatWait.ts).
   */
  readonly #books: RouteBooks;

  constructor(
    private readonly policy: RoutingPolicy,
    private readonly slots: ReadonlyMap<string, InstanceView>,
    /** Where the encoder-output store holds an item's rows (ecEntryOf); without a store every item is a miss. */
    private readonly ecWhere: (item: MediaItem) => EcEntry | null = () => null,
    /** How long an ended request's blocks count as held on its Thinker without a report (KvIndex.ts). */
    kvPredictionMs = PREDICTION_MS,
  ) {
    this.#books = {
      queued: new QueuedPrefill(),
      prefillRates: new LearnedRates(),
      encoders: new EncoderQueues(),
      kv: new KvIndex(kvPredictionMs),
      liveCost: new LiveCost(),
      seats: new SeatWait(),
    };
  }

  /**
   * A process became READY under this name (a first boot, a restarted replica, a remote instance that joined or came
   * back): its prefix cache is empty or unknown until its first report, whatever an earlier process of that name
   * reported. Without this, a turn routed between a restarted instance's READY and its first report counted on the
   * blocks its previous process held.
   */
  forget(instance: string): void {
    this.#books.kv.forget(instance);
  }

  /**
   * An instance's stats report arrived: what its prefix cache holds goes into the index now, between requests, rather
   * than when the next request is routed (a report carries up to ~1,000 names; comparing and indexing them was on
   * every request's way to its first token). route() still reads every ready instance's latest report, so routing
   * sees the same index either way: one already applied costs it nothing (KvIndex.update).
   */
  reported(view: InstanceView): void {
    const held = descriptorOf(view.spec.kind).prefixHeld;
    if (held && view.stats && view.status === 'ready') this.#books.kv.update(view.instance, held(view.stats));
  }

  /**
   * The instance of each stage in `stages` for a request. `pinned` returns the entry stage's instance when
   * something else decides it (a retained prompt prefix lives there), calling `pick` otherwise.
   */
  route(
    requestId: string,
    entryStageId: string,
    stages: readonly StageSpec[],
    prompt: PreparedPrompt,
    pinned: (spec: StageSpec, pick: () => InstanceView) => InstanceView,
    /** Its first packet is audio (it asks for audio out): it competes until its first audio, not its first text. */
    wantsAudio = false,
    /** Items its Thinker holds the KV of may go to no encoder (false once that proved wrong for the request). */
    skipHeld = true,
  ): Routed {
    const ready = (spec: StageSpec) => [...this.slots.values()].filter((s) => s.spec === spec && s.status === 'ready');
    const items: RouteItem[] = prompt.items.map((i) => ({
      index: i.index,
      modality: i.modality,
      numEmbeddings: i.numEmbeddings,
      stageId: i.encoder.stageId,
    }));
    const request = { promptTokens: prompt.promptTokenIds.length, items };
    const byIndex = new Map(prompt.items.map((i) => [i.index, i]));
    const ecLookup: EcLookup = (item) => this.ecWhere(byIndex.get(item.index)!);
    const routed = (s: StageSpec) => s.stageId === entryStageId || s.encoder !== undefined;
    const byPolicy = (spec: StageSpec): InstanceView => {
      if (this.policy === 'round_robin') {
        const pool = ready(spec);
        if (pool.length === 0) return leastLoaded(pool, spec); // throws OVERLOADED
        const turn = this.#turn.get(spec.stageId) ?? 0;
        this.#turn.set(spec.stageId, turn + 1);
        return pool[turn % pool.length];
      }
      return leastLoaded(this.slots.values(), spec);
    };
    const chosen = new Map<string, InstanceView>();
    let reason: string = this.policy;
    const entry = stages.find((s) => s.stageId === entryStageId)!;
    let cached: ReadonlyMap<string, number> = new Map();
    const named = namedPrompt(prompt); // named once (KvIndex.names): the overlaps, the queue, the prediction
    const firstPacket = { wantsAudio, pathMs: (ms: number) => pathWaitMs(this.slots.values(), entry, ms) };
    if (items.length === 0 && !stages.some((s) => s.encoder)) {
      const only = ready(entry);
      // One ready instance of the entry stage and no media: nothing to choose. What the route knows of the choice
      // (the overlap with that instance's cache, the prediction) is worked out in the booking, once the adds are
      // sent: the cache's names, the snapshot and the scoring were ~0.1 ms of a single-instance request's way to its
      // first model step. They come out as they would have here: the booking comes in the same turn, before the
      // queues count this request (the reports change between turns).
      if (only.length === 1) {
        let pinnedHere = true; // unless pick() runs: a retained prefix decided the Thinker
        const pick = () => ((pinnedHere = false), this.policy === 'ttft' ? only[0] : byPolicy(entry));
        chosen.set(entry.stageId, pinned(entry, pick));
        if (this.policy === 'ttft') reason = pinnedHere ? 'pinned' : 'single';
        for (const s of stages) if (!chosen.has(s.stageId)) chosen.set(s.stageId, leastLoaded(this.slots.values(), s));
        const overlaps = () => (this.policy === 'ttft' ? this.overlaps(entry, named) : new Map<string, number>());
        const book = this.admit(requestId, named, request, chosen, [entry], reason, ecLookup, overlaps, firstPacket);
        return { chosen, book, held: new Set() };
      }
    }
    if (this.policy === 'ttft') {
      cached = this.overlaps(entry, named);
      const all = this.snapshot(stages.filter(routed), () => true, ecLookup, cached);
      const best = () => chooseRoute(all, request);
      let choice = null as ReturnType<typeof chooseRoute>;
      reason = 'pinned'; // unless pick() runs: a retained prefix decided the Thinker
      const thinker = pinned(entry, () => {
        choice = best();
        reason = choice?.reason ?? 'single';
        return choice ? this.slots.get(choice.thinker)! : leastLoaded(this.slots.values(), entry);
      });
      chosen.set(entry.stageId, thinker);
      // Pinned elsewhere (a prefix): the best encoders for that Thinker.
      choice ??= chooseRoute(
        { ...all, thinkers: all.thinkers.filter((t) => t.instance === thinker.instance) },
        request,
      );
      for (const s of stages.filter((x) => x.encoder))
        chosen.set(
          s.stageId,
          this.slots.get(choice?.encoders.get(s.stageId) ?? '') ?? leastLoaded(this.slots.values(), s),
        );
    } else {
      chosen.set(
        entry.stageId,
        pinned(entry, () => byPolicy(entry)),
      );
      for (const s of stages.filter((x) => x.encoder)) chosen.set(s.stageId, byPolicy(s));
    }
    for (const s of stages) if (!chosen.has(s.stageId)) chosen.set(s.stageId, leastLoaded(this.slots.values(), s));
    const thinkerInstance = chosen.get(entry.stageId)!.instance;
    // Other policies route without the index; an item's encode may still be skipped on what it knows.
    const keyed = skipHeld && prompt.items.some((i) => blockKeyOf(i) !== undefined);
    const known = this.policy !== 'ttft' && keyed ? this.overlaps(entry, named) : cached;
    const held = skipHeld ? heldItems(prompt, known.get(thinkerInstance) ?? 0) : new Set<number>();
    const work = { ...request, items: request.items.filter((i) => !held.has(i.index)) }; // no encode for those
    const routedStages = stages.filter(routed);
    const book = this.admit(requestId, named, work, chosen, routedStages, reason, ecLookup, cached, firstPacket);
    return { chosen, book, held };
  }

  /**
   * Prompt positions each ready instance of the entry stage holds in its prefix cache, from its latest stats report
   * (an instance restarting or lost is not ready: it counts for nothing, and leaves the index).
   */
  private overlaps(entry: StageSpec, prompt: NamedPrompt): ReadonlyMap<string, number> {
    const { kv } = this.#books;
    const ready = [...this.slots.values()].filter((s) => s.spec === entry && s.status === 'ready');
    kv.retain(new Set(ready.map((s) => s.instance)));
    // No report yet (a stage just started): what main predicted stands; a report without a cache: it holds nothing.
    const held = descriptorOf(entry.kind).prefixHeld;
    for (const s of ready) if (s.stats) kv.update(s.instance, held?.(s.stats));
    if (kv.size === 0) return new Map();
    return kv.overlaps(
      ready.map((s) => s.instance),
      prompt,
      Date.now(),
    );
  }

  /**
   * When a request admitted now would start and first answer (admission on latency, admissionDecision.ts): the TTFT
   * routing predicts for a typical prompt on the best Thinker instance of `entry`, plus what its predictions lately
   * missed the first text and the first audio by, per live request, times the requests live now, scaled by the 95th
   * percentile of what such estimates lately missed by (LiveCost.ts); plus the wait for a batch seat (SeatWait.ts;
   * `seated`: whether an in-flight request holds one, a paused one does not).
   * null before a request was routed, or with no ready instance.
   */
  estimate(entry: StageSpec, seated: (id: string) => boolean = () => true): FirstOutputEstimate | null {
    const { liveCost, seats } = this.#books;
    const typicalTokens = liveCost.typicalPromptTokens;
    if (typicalTokens === null) return null;
    const all = this.snapshot(
      [entry],
      () => true,
      () => null,
    );
    const queue = chooseRoute(all, { promptTokens: 0, items: [] });
    const typical = chooseRoute(all, { promptTokens: typicalTokens, items: [] });
    if (!queue || !typical) return null;
    const predictedMs = typical.predictedTtftSeconds * 1000;
    // A seat at the Thinker before its first text; at every seated stage (the Talker too) before its first audio.
    const nowMs = Date.now();
    const entrySeatMs = seats.waitMs(this.slots.values(), [entry], nowMs, seated);
    const seatMs = seats.waitMs(this.slots.values(), 'all', nowMs, seated);
    const pathMs = pathWaitMs(this.slots.values(), entry, predictedMs);
    const ttfpMs = liveCost.estimate(predictedMs, 'ttfp', pathMs);
    return {
      queueMs: queue.predictedTtftSeconds * 1000 + entrySeatMs,
      // never null: the prediction alone at first
      ttftMs: (liveCost.estimate(predictedMs, 'ttft', pathMs) ?? 0) + entrySeatMs,
      ttfpMs: ttfpMs === null ? null : ttfpMs + seatMs,
      aloneMs: { ttft: liveCost.alone.ms('ttft'), ttfp: liveCost.alone.ms('ttfp') },
    };
  }

  /** How long the slowest frame-making stage's steps take now (stepWait.ts frameStepMs). */
  frameStepMs(entry: StageSpec): number {
    return frameStepMs(this.slots.values(), entry);
  }

  /** The load and rates of the ready instances of `stages` (for tests and /v1/stages-style introspection too). */
  snapshot(
    stages: readonly StageSpec[],
    keep: (slot: InstanceView) => boolean,
    ecLookup: EcLookup,
    cached: ReadonlyMap<string, number> = new Map(),
  ): LoadSnapshot {
    const thinkers: ThinkerLoad[] = [];
    const encoders: EncoderLoad[] = [];
    for (const slot of this.slots.values()) {
      if (slot.status !== 'ready' || !stages.includes(slot.spec) || !keep(slot)) continue;
      if (slot.spec.encoder)
        encoders.push({
          instance: slot.instance,
          stageId: slot.spec.stageId,
          modality: slot.spec.encoder.modality,
          ...this.#books.encoders.loadOf(slot.instance),
          inFlight: slot.inFlight.size,
          host: hostOf(slot),
        });
      else
        thinkers.push({
          instance: slot.instance,
          queuedPrefillTokens: this.#books.queued.tokens(slot.instance),
          prefillTokensPerSecond: this.#books.prefillRates.get(slot.instance),
          inFlight: slot.inFlight.size,
          cachedPositions: cached.get(slot.instance) ?? 0,
          host: hostOf(slot),
        });
    }
    return { thinkers, encoders, ecLookup, defaults: ROUTE_DEFAULTS };
  }

  private admit(
    requestId: string,
    named: NamedPrompt,
    request: { promptTokens: number; items: readonly RouteItem[] },
    chosen: ReadonlyMap<string, InstanceView>,
    routed: readonly StageSpec[],
    reason: string,
    ecLookup: EcLookup,
    /** The positions each instance's cache holds of the prompt; a function: worked out when booked. */
    cached: ReadonlyMap<string, number> | (() => ReadonlyMap<string, number>),
    firstPacket: Pick<RouteFacts, 'wantsAudio' | 'pathMs'>,
  ): RouteBooking {
    const entry = routed.find((s) => !s.encoder);
    const thinker = entry && chosen.get(entry.stageId);
    if (!thinker) return () => null;
    // The prediction for what was chosen, whatever the policy (so least_loaded's guesses are checked too): made now,
    // while the instances' in-flight requests are those before this one (an encoder's count enters its estimate).
    const mine = (s: InstanceView) => [...chosen.values()].includes(s);
    const predict = (overlaps: ReadonlyMap<string, number>) => ({
      overlaps,
      predicted: chooseRoute(this.snapshot(routed, mine, ecLookup, overlaps), request),
    });
    const atChoice = typeof cached === 'function' ? null : predict(cached);
    let booked = false;
    return () => {
      if (booked) throw new ChorusError(ErrorCodes.INTERNAL, `request ${requestId}: its route was booked already`);
      booked = true;
      const { overlaps, predicted } = atChoice ?? predict(typeof cached === 'function' ? cached() : cached);
      const hits = new Set(predicted?.ecHits ?? []);
      const toEncode = request.items.filter((i) => !hits.has(i.index));
      const encoders = this.#books.encoders.admit(toEncode, (i) => chosen.get(i.stageId)!.instance);
      const modalities = new Set(request.items.map((i) => i.modality));
      const cachedPositions = overlaps.get(thinker.instance) ?? 0;
      const ticket = new RoutedRequest(this.#books, {
        requestId,
        thinker: thinker.instance,
        entry,
        promptTokens: request.promptTokens,
        cachedPositions,
        named,
        encoders,
        predictedTtftSeconds: predicted?.predictedTtftSeconds ?? 0,
        modality: modalities.size === 0 ? 'text' : modalities.size > 1 ? 'mixed' : [...modalities][0],
        ...firstPacket,
      });
      diagnostics.routeDecision.publish({ policy: this.policy, reason, instance: thinker.instance, cachedPositions });
      return ticket;
    };
  }
}

/** Main's own machine; a remote instance's is the one its heartbeats name. */
const MAIN_HOST = hostname();
const hostOf = (slot: InstanceView) => slot.remote?.host ?? MAIN_HOST;

/** A prompt as the KV index names it: token ids and keyed media (a video) up to its first media position without. */
function namedPrompt(prompt: PreparedPrompt): NamedPrompt {
  const keyed: KeyedSpan[] = [];
  let namable = prompt.promptTokenIds.length;
  for (const span of prompt.spans) {
    const blockKey = blockKeyOf(prompt.items[span.item]);
    if (blockKey === undefined) namable = Math.min(namable, span.start);
    else keyed.push({ start: span.start, length: span.length, blockKey, offset: span.offset });
  }
  return { tokenIds: prompt.promptTokenIds, namable, cacheSalt: prompt.cacheSalt, keyed };
}
