/**
 * The spans a stage process records for the requests it serves, children of each request's root span (its
 * `traceparent` came in `add`):
 *
 *   stage <stageId>      admission (add) -> the request's end in this stage; attributes: chorus.stage,
 *                        chorus.instance, chorus.request_id, chorus.status, chorus.steps, chorus.positions,
 *                        chorus.chunks_in, chorus.bytes_in, chorus.chunks_out; event first_chunk_out
 *     queue              add -> the first step that serves the request
 *     <phase> step       one scheduler step (prefill | decode | run), parent: the first traced request in the
 *                        batch, linked to every other traced request in it (one span per step, not per request);
 *                        attributes chorus.batch_size, chorus.positions
 *     chunk hop          the first chunk of each input edge: put in the producer -> taken here (from, to, bytes,
 *                        transport: the edge's connector kind), linked to the producer's stage span (its trace
 *                        context rides in that chunk's metadata, chunkOut);
 *                        later hops are aggregated on the stage span (count, bytes, slowest)
 *     ec lookup          one media item in the encoder-output store (the Thinker): miss, or a hit's rows taken
 *                        (local copy, Redis, lost, failed), with their bytes
 *
 * Bounded: decode and run steps are recorded one in STEP_SPAN_EVERY (per process, so a batch shares them), prefill
 * steps and each request's first step always (a few per request). The SDK's BatchSpanProcessor exports off the step
 * loop.
 *
 * Off every request's path: making a span costs ~0.1 ms between model runs (its code runs cold), and a burst of ten
 * requests made several spans each in every stage before their first packets. So the hooks only note times and
 * counters, and the spans are made when the stage has nothing to run (idle(), a few at a time, the step loop looking
 * for work between calls): at once when it serves no request, but while it serves some only once many are noted or
 * the oldest is old (a stage waiting for a request's next input is on that request's path), and after a step only
 * a slice at a time when a stage that never idles has noted too many. A request's
 * stage span is made last, once the request has ended here, with every attribute at once. Its context is known from
 * admission: its span id is reserved then (spanIds.ts), so the first chunk to another stage carries it (chunkOut)
 * and its children name it as their parent before it exists.
 */
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Context,
  type HrTime,
  type Link,
  type SpanContext,
} from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import { MAIN } from '../common/graph.ts';
import type { ReservedSpanIds } from './spanIds.ts';
import { spanTime } from './spanClock.ts';
import { contextFromTraceparent, traceparentOfContext } from './traceContext.ts';
import type { Tracing } from './tracing.ts';

/**
 * One decode or run step span in this many per process (a 100-token answer: ~7 decode steps in the Thinker instead of
 * 100), besides prefill steps and the steps that are a request's first, which are all recorded.
 */
export const STEP_SPAN_EVERY = 16;

/**
 * A stage serving requests starts making its noted spans when idle only once this many are noted, or the first of them
 * was noted this long ago (its idle moments are then waits for a request's next input); then it makes them all, a slice
 * per idle moment.
 */
export const DEFERRED_SPANS = 256;
export const DEFERRED_MS = 2000;

/**
 * A stage that never idles makes a slice of its noted spans after each step while more than this many are noted: memory
 * stays bounded and no step waits for a thousand spans at once (the SDK's export queue holds 2048).
 */
export const MAX_NOTED_SPANS = 1024;

/** Spans made per idle() call: the step loop looks for work between calls. */
export const SPANS_PER_IDLE_SLICE = 16;

export type TracedStepPhase = 'prefill' | 'decode' | 'run';

/** An encoder-output store lookup's outcome (ecLookup). */
export type EcLookupResult = 'miss' | 'local' | 'redis' | 'lost' | 'failed';

/** Span names by step phase, made once (a name per step span would be a string per step). */
const STEP_SPAN_NAMES: Readonly<Record<TracedStepPhase, string>> = {
  prefill: 'prefill step',
  decode: 'decode step',
  run: 'run step',
};

/** The first chunk of an input edge, noted on arrival. */
interface Hop {
  readonly from: string;
  readonly sentAtMs: number;
  readonly receivedAtMs: number;
  readonly bytes: number;
  /** The producer's stage span (ChunkMeta.traceparent), when the chunk named a well-formed one. */
  readonly producer: Link | null;
}

interface Lookup {
  readonly attributes: Attributes;
  readonly start: HrTime;
  readonly end: HrTime;
}

interface NotedStep {
  readonly name: string;
  readonly start: HrTime;
  readonly end: HrTime;
  readonly parent: Traced;
  readonly links: Link[] | undefined;
  readonly attributes: Attributes;
}

interface Traced {
  readonly requestId: string;
  /** The root span's context (the add's traceparent). */
  readonly parent: Context;
  /** This stage's span for the request, by its reserved id: known from admission, made once the request ended. */
  readonly spanContext: SpanContext;
  /** The context whose span is the stage span (the parent of every span here), made when first needed. */
  context: Context | null;
  readonly addedAt: HrTime;
  /**
   * The earliest put (epoch ms) of a chunk this request took. Over Redis the add (control channel) and the producer's
   * first chunk (data channel) travel apart, so that put can come before the add: the stage span then opens there,
   * to contain its chunk hops.
   */
  firstSentAtMs: number;
  /** When the first step that served the request started; its queue span runs from addedAt to there. */
  queueEnd: HrTime | null;
  queueDone: boolean;
  /** Noted, not made yet. */
  hops: Hop[];
  lookups: Lookup[];
  /** The first chunk out (to, when): an event on the stage span. */
  firstOut: { readonly to: string; readonly at: HrTime } | null;
  steps: number;
  positions: number;
  chunksIn: number;
  bytesIn: number;
  slowestHopMs: number;
  chunksOut: number;
  /** Input edges whose first hop is noted. */
  readonly hopped: Set<string>;
  /** Output edges (consumer stage ids) whose first chunk carried this span's trace context. */
  readonly linkedOut: Set<string>;
  /** Set by end(): how it ended, and when (moved to the end of the step recorded after it, which it contains). */
  ending: { readonly status: string; readonly error?: { code: string; message: string } } | null;
  endedAt: HrTime | null;
}

export class StageSpans {
  readonly #traced = new Map<string, Traced>();
  /** Recorded steps whose spans are not made yet, in order. */
  #steps: NotedStep[] = [];
  /** Requests with a span to make: a queue that ended, a hop, a lookup, or their end. */
  readonly #ready = new Set<Traced>();
  /** Spans noted and not made. */
  #noted = 0;
  /** When the first span noted since all were made was noted (performance.now()); null when none is noted. */
  #notedSinceMs: number | null = null;
  /** Making every noted span, a slice per idle moment, though the stage serves requests (DEFERRED_*). */
  #draining = false;
  /** Decode and run steps that served a traced request (STEP_SPAN_EVERY). */
  #repeatedSteps = 0;
  readonly #tracer: Tracing['tracer'];
  readonly #ids: ReservedSpanIds;

  constructor(
    tracing: Pick<Tracing, 'tracer' | 'ids'>,
    private readonly stageId: string,
    private readonly instance: string,
    /** Upstream stage id -> the kind of connector its edge to this stage runs on (shm, redis...). */
    private readonly edgeTransports: ReadonlyMap<string, string> = new Map(),
  ) {
    this.#tracer = tracing.tracer;
    this.#ids = tracing.ids;
  }

  /** A request admitted: noted (its spans are made later), when it has a sampled trace context. */
  add(requestId: string, traceparent: string | undefined): void {
    if (traceparent === undefined) return;
    const previous = this.#traced.get(requestId);
    if (previous && !previous.ending) return; // a duplicate add
    // The id ended and comes back before its spans were made: they are made now, the new run is a new span.
    if (previous) {
      this.#ready.delete(previous);
      this.#unnote(this.#make(previous, Infinity));
    }
    const parent = contextFromTraceparent(traceparent);
    const parentSpan = trace.getSpanContext(parent);
    if (!parentSpan) return; // malformed: nothing to join
    if ((parentSpan.traceFlags & TraceFlags.SAMPLED) === 0) return; // the root was not sampled
    this.#traced.set(requestId, {
      requestId,
      parent,
      spanContext: {
        traceId: parentSpan.traceId,
        spanId: this.#ids.reserve(),
        traceFlags: TraceFlags.SAMPLED,
        ...(parentSpan.traceState ? { traceState: parentSpan.traceState } : {}),
      },
      context: null,
      addedAt: spanTime(),
      firstSentAtMs: Infinity,
      queueEnd: null,
      queueDone: false,
      hops: [],
      lookups: [],
      firstOut: null,
      steps: 0,
      positions: 0,
      chunksIn: 0,
      bytesIn: 0,
      slowestHopMs: 0,
      chunksOut: 0,
      hopped: new Set(),
      linkedOut: new Set(),
      ending: null,
      endedAt: null,
    });
  }

  /**
   * An input chunk taken (sentAtMs / receivedAtMs: epoch ms of the producer's put and this get; producer: the
   * chunk's ChunkMeta.traceparent, untrusted).
   */
  arrival(
    requestId: string,
    from: string,
    sentAtMs: number,
    receivedAtMs: number,
    bytes: number,
    producer?: unknown,
  ): void {
    const t = this.#traced.get(requestId);
    if (!t) return;
    t.chunksIn++;
    t.bytesIn += bytes;
    t.slowestHopMs = Math.max(t.slowestHopMs, receivedAtMs - sentAtMs);
    t.firstSentAtMs = Math.min(t.firstSentAtMs, sentAtMs);
    if (t.hopped.has(from)) return;
    t.hopped.add(from);
    const producerSpan = producer === undefined ? undefined : trace.getSpanContext(contextFromTraceparent(producer));
    t.hops.push({ from, sentAtMs, receivedAtMs, bytes, producer: producerSpan ? { context: producerSpan } : null });
    this.#note(t);
  }

  /**
   * A step ran from startedAtMs (performance.now()) until now, serving these requests' positions. It runs after every
   * step of the stage, once the step's outputs are put; it allocates only for a step it records (a decode step not
   * recorded costs the counters), and makes spans only beyond MAX_NOTED_SPANS noted (a slice: a stage that never
   * idles).
   */
  step(phase: TracedStepPhase, startedAtMs: number, items: readonly (readonly [string, number])[]): void {
    if (this.#traced.size === 0) return;
    let first: Traced | null = null;
    let others: Traced[] | null = null;
    let firstStep = false;
    let positions = 0;
    let now: HrTime | null = null;
    for (const [requestId, n] of items) {
      const t = this.#traced.get(requestId);
      if (!t) continue;
      if (t.steps++ === 0) firstStep = true;
      t.positions += n;
      if (t.queueEnd === null) {
        t.queueEnd = spanTime(startedAtMs);
        if (!t.ending) this.#note(t); // (an ended request's queue was noted by end())
      }
      if (t.ending) t.endedAt = now ??= spanTime(); // the step that ended it: the stage span contains it
      positions += n;
      if (first === null) first = t;
      else (others ??= []).push(t);
    }
    if (first === null) return;
    // Prefill steps, and any step that is a traced request's first (its first token, its first audio), always; the
    // other decode and run steps one in STEP_SPAN_EVERY.
    const record = phase === 'prefill' || firstStep || this.#repeatedSteps % STEP_SPAN_EVERY === 0;
    if (phase !== 'prefill') this.#repeatedSteps++;
    if (record) {
      this.#steps.push({
        name: STEP_SPAN_NAMES[phase],
        start: spanTime(startedAtMs),
        end: now ?? spanTime(),
        parent: first,
        links: others?.map((t): Link => ({ context: t.spanContext })),
        attributes: { 'chorus.batch_size': items.length, 'chorus.positions': positions },
      });
      this.#note(null);
    }
    if (this.#noted > MAX_NOTED_SPANS) this.#makeNoted(SPANS_PER_IDLE_SLICE);
  }

  /**
   * One of the request's media items looked up in the encoder-output store: `miss` (main sent it to an encoder), or
   * a hit whose rows were taken from this process's copy (`local`), Redis (`redis`), were gone (`lost`) or could not
   * be read (`failed`), from startedAtMs (performance.now()) until now.
   */
  ecLookup(requestId: string, item: number, result: EcLookupResult, startedAtMs: number, bytes: number): void {
    const t = this.#traced.get(requestId);
    if (!t) return;
    const attributes = { 'chorus.ec.item': item, 'chorus.ec.result': result, 'chorus.bytes': bytes };
    t.lookups.push({ attributes, start: spanTime(startedAtMs), end: spanTime() });
    this.#note(t);
  }

  /**
   * A chunk of the request put to `to`; the first is an event on the stage span. Returns the stage span's trace
   * context for the first chunk to each other stage (the chunk carries it: ChunkMeta.traceparent), else undefined;
   * main ("main") reads none.
   */
  chunkOut(requestId: string, to: string): string | undefined {
    const t = this.#traced.get(requestId);
    if (!t) return undefined;
    if (t.chunksOut++ === 0) t.firstOut = { to, at: spanTime() };
    if (to === MAIN || t.linkedOut.has(to)) return undefined;
    t.linkedOut.add(to);
    return traceparentOfContext(t.spanContext);
  }

  /**
   * The request ended in this stage (finished, failed, aborted or dropped). Its stage span is made with the other
   * noted spans; a core frees a request inside the step that finished it and records that step after, so that last
   * step still counts and lies within the span (step()).
   */
  end(requestId: string, status: string, error?: { code: string; message: string }): void {
    const t = this.#traced.get(requestId);
    if (!t || t.ending) return;
    t.ending = { status, ...(error ? { error } : {}) };
    t.endedAt = spanTime();
    if (t.queueEnd === null) this.#note(t); // its queue ends here too
    this.#note(t);
  }

  /**
   * Makes a few of the noted spans (SPANS_PER_IDLE_SLICE): the step loop calls it when it has nothing to run, and
   * looks for work before calling again. `serving`: the stage holds requests (then only DEFERRED_SPANS or
   * DEFERRED_MS make it start). False when it made nothing.
   */
  idle(serving: boolean): boolean {
    if (this.#ready.size === 0 && this.#steps.length === 0) return false;
    if (serving && !this.#draining) {
      if (this.#noted < DEFERRED_SPANS && performance.now() - this.#notedSinceMs! < DEFERRED_MS) return false;
      this.#draining = true;
    }
    this.#makeNoted(SPANS_PER_IDLE_SLICE);
    return true;
  }

  /** Makes every noted span (a process about to exit). */
  flush(): void {
    this.#makeNoted(Infinity);
  }

  /** `made` noted spans made. */
  #unnote(made: number): void {
    this.#noted -= made;
    if (this.#ready.size > 0 || this.#steps.length > 0) return;
    this.#noted = 0; // all made (exact: every span noted is made once)
    this.#notedSinceMs = null;
    this.#draining = false;
  }

  /** One span noted (of request `t`, or a step's). */
  #note(t: Traced | null): void {
    if (this.#noted === 0) this.#notedSinceMs = performance.now();
    this.#noted++;
    if (t) this.#ready.add(t);
  }

  /** Makes up to about `budget` noted spans (whole units: a step, or one request's noted spans); how many it made. */
  #makeNoted(budget: number): number {
    let made = 0;
    let head = 0;
    while (head < this.#steps.length && made < budget) {
      const s = this.#steps[head++];
      const options = s.links
        ? { startTime: s.start, links: s.links, attributes: s.attributes }
        : { startTime: s.start, attributes: s.attributes };
      this.#tracer.startSpan(s.name, options, this.#contextOf(s.parent)).end(s.end);
      made++;
    }
    this.#steps = head === this.#steps.length ? [] : this.#steps.slice(head);
    for (const t of this.#ready) {
      if (made >= budget) break;
      made += this.#make(t, budget - made);
      if (!t.ending || this.#traced.get(t.requestId) !== t) this.#ready.delete(t); // all it noted is made
    }
    this.#unnote(made);
    return made;
  }

  #contextOf(t: Traced): Context {
    return (t.context ??= trace.setSpanContext(ROOT_CONTEXT, t.spanContext));
  }

  /**
   * What the request noted, made: its queue span once the queue ended, first hops, lookups; once it ended, its stage
   * span (so last: its children are all made). How many spans it made.
   */
  #make(t: Traced, budget: number): number {
    let made = 0;
    if (t.ending) t.queueEnd ??= t.endedAt; // ended before any step served it: its queue ended then
    if (!t.queueDone && t.queueEnd) {
      this.#tracer.startSpan('queue', { startTime: t.addedAt }, this.#contextOf(t)).end(t.queueEnd);
      t.queueDone = true;
      made++;
    }
    for (const hop of t.hops) {
      const span = this.#tracer.startSpan(
        'chunk hop',
        {
          startTime: hop.sentAtMs,
          ...(hop.producer ? { links: [hop.producer] } : {}),
          attributes: {
            'chorus.edge.from': hop.from,
            'chorus.edge.to': this.stageId,
            'chorus.bytes': hop.bytes,
            ...(this.edgeTransports.has(hop.from)
              ? { 'chorus.edge.transport': this.edgeTransports.get(hop.from) }
              : {}),
          },
        },
        this.#contextOf(t),
      );
      span.end(hop.receivedAtMs);
      made++;
    }
    if (t.hops.length > 0) t.hops = [];
    for (const lookup of t.lookups) {
      const options = { startTime: lookup.start, attributes: lookup.attributes };
      this.#tracer.startSpan('ec lookup', options, this.#contextOf(t)).end(lookup.end);
      made++;
    }
    if (t.lookups.length > 0) t.lookups = [];
    if (!t.ending || made >= budget) return made;
    this.#traced.delete(t.requestId);
    this.#makeStageSpan(t);
    return made + 1;
  }

  /** The stage span of an ended request, under its reserved id, with every attribute at once. */
  #makeStageSpan(t: Traced): void {
    const ending = t.ending!;
    const span = this.#ids.startWith(t.spanContext.spanId, () =>
      this.#tracer.startSpan(
        `stage ${this.stageId}`,
        {
          startTime: t.firstSentAtMs < hrTimeToMilliseconds(t.addedAt) ? t.firstSentAtMs : t.addedAt,
          attributes: {
            'chorus.stage': this.stageId,
            'chorus.instance': this.instance,
            'chorus.request_id': t.requestId,
            'chorus.status': ending.status,
            'chorus.steps': t.steps,
            'chorus.positions': t.positions,
            'chorus.chunks_in': t.chunksIn,
            'chorus.bytes_in': t.bytesIn,
            'chorus.slowest_hop_ms': t.slowestHopMs,
            'chorus.chunks_out': t.chunksOut,
          },
        },
        t.parent,
      ),
    );
    if (t.firstOut) span.addEvent('first_chunk_out', { 'chorus.edge.to': t.firstOut.to }, t.firstOut.at);
    const error = ending.error;
    if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: `${error.code}: ${error.message}` });
    span.end(t.endedAt!);
  }
}
