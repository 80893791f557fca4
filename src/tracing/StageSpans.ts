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
 * Off the first packet's path: a span costs ~0.1 ms made between model runs (its code runs cold), and a burst of ten
 * requests made three spans each in every stage before their first step. So `add` and a chunk's arrival only note
 * times; the spans are made after the step that served the request (its outputs already put), with those times. The
 * stage span is made earlier only when a chunk to another stage must carry its context (chunkOut), or for an EC-store
 * lookup.
 */
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Context,
  type HrTime,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { spanTime } from './spanClock.ts';
import { contextFromTraceparent, traceparentOf } from './traceContext.ts';

/**
 * One decode or run step span in this many per process (a 100-token answer: ~7 decode steps in the Thinker instead of
 * 100), besides prefill steps and the steps that are a request's first, which are all recorded.
 */
export const STEP_SPAN_EVERY = 16;

export type TracedStepPhase = 'prefill' | 'decode' | 'run';

/** An encoder-output store lookup's outcome (ecLookup). */
export type EcLookupResult = 'miss' | 'local' | 'redis' | 'lost' | 'failed';

/** Span names by step phase, made once (a name per step span would be a string per step). */
const STEP_SPAN_NAMES: Readonly<Record<TracedStepPhase, string>> = {
  prefill: 'prefill step',
  decode: 'decode step',
  run: 'run step',
};

/** The first chunk of an input edge, noted on arrival; its span is made after the step that took it. */
interface Hop {
  readonly from: string;
  readonly sentAtMs: number;
  readonly receivedAtMs: number;
  readonly bytes: number;
  /** The producer's stage span (ChunkMeta.traceparent), when the chunk named a well-formed one. */
  readonly producer: Link | null;
}

interface Traced {
  readonly requestId: string;
  /** The root span's context (the add's traceparent). */
  readonly parent: Context;
  readonly addedAt: HrTime;
  /** The stage span and the context whose active span it is, once made (made: the parent of every span here). */
  span: Span | null;
  context: Context | null;
  /** When the first step that served the request started; its queue span is made from addedAt to there. */
  queueEnd: HrTime | null;
  queueDone: boolean;
  hops: Hop[];
  /** The first chunk out (to, when), until it is an event on the stage span. */
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
  /** Set by end(): how it ended; the span closes once the step in progress (if any) is recorded. */
  ending: { readonly status: string; readonly error?: { code: string; message: string } } | null;
}

export class StageSpans {
  readonly #traced = new Map<string, Traced>();
  /** Decode and run steps that served a traced request (STEP_SPAN_EVERY). */
  #repeatedSteps = 0;
  #closeQueued = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly stageId: string,
    private readonly instance: string,
    /** Upstream stage id -> the kind of connector its edge to this stage runs on (shm, redis...). */
    private readonly edgeTransports: ReadonlyMap<string, string> = new Map(),
  ) {}

  /** A request admitted: noted (its spans are made later), when it has a sampled trace context. */
  add(requestId: string, traceparent: string | undefined): void {
    if (traceparent === undefined) return;
    const previous = this.#traced.get(requestId);
    if (previous && !previous.ending) return; // a duplicate add
    if (previous) this.#closeEnded(); // the id ended and comes back before its span closed: close it first
    const parent = contextFromTraceparent(traceparent);
    const parentSpan = trace.getSpanContext(parent);
    if (!parentSpan) return; // malformed: nothing to join
    if ((parentSpan.traceFlags & TraceFlags.SAMPLED) === 0) return; // the root was not sampled
    this.#traced.set(requestId, {
      requestId,
      parent,
      addedAt: spanTime(),
      span: null,
      context: null,
      queueEnd: null,
      queueDone: false,
      hops: [],
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
    if (t.hopped.has(from)) return;
    t.hopped.add(from);
    const producerSpan = producer === undefined ? undefined : trace.getSpanContext(contextFromTraceparent(producer));
    t.hops.push({ from, sentAtMs, receivedAtMs, bytes, producer: producerSpan ? { context: producerSpan } : null });
  }

  /**
   * A step ran from startedAtMs (performance.now()) until now, serving these requests' positions. It runs after every
   * step of the stage, once the step's outputs are put, so it makes what the step's requests noted before it (their
   * stage and queue spans, first hops); it allocates only for a step it records: a decode step not recorded costs the
   * counters.
   */
  step(phase: TracedStepPhase, startedAtMs: number, items: readonly (readonly [string, number])[]): void {
    if (this.#traced.size === 0) return;
    let first: Traced | null = null;
    let others: Traced[] | null = null;
    let firstStep = false;
    let positions = 0;
    for (const [requestId, n] of items) {
      let t: Traced | null | undefined = this.#traced.get(requestId);
      if (!t) continue;
      if (t.steps++ === 0) firstStep = true;
      t.positions += n;
      t.queueEnd ??= spanTime(startedAtMs);
      if (!t.queueDone || t.hops.length > 0 || t.firstOut) t = this.#catchUp(t);
      if (!t?.context) continue;
      positions += n;
      if (first === null) first = t;
      else (others ??= []).push(t);
    }
    if (first === null) return;
    // Prefill steps, and any step that is a traced request's first (its first token, its first audio), always; the
    // other decode and run steps one in STEP_SPAN_EVERY.
    const record = phase === 'prefill' || firstStep || this.#repeatedSteps % STEP_SPAN_EVERY === 0;
    if (phase !== 'prefill') this.#repeatedSteps++;
    if (!record) return;
    const attributes = { 'chorus.batch_size': items.length, 'chorus.positions': positions };
    const startTime = spanTime(startedAtMs);
    const links = others?.map((t): Link => ({ context: t.span!.spanContext() }));
    const options = links ? { startTime, links, attributes } : { startTime, attributes };
    this.tracer.startSpan(STEP_SPAN_NAMES[phase], options, first.context!).end(spanTime());
  }

  /**
   * One of the request's media items looked up in the encoder-output store: `miss` (main sent it to an encoder), or
   * a hit whose rows were taken from this process's copy (`local`), Redis (`redis`), were gone (`lost`) or could not
   * be read (`failed`), from
   * startedAtMs (performance.now()) until now.
   */
  ecLookup(requestId: string, item: number, result: EcLookupResult, startedAtMs: number, bytes: number): void {
    const t = this.#traced.get(requestId);
    if (!t || !this.#made(t)) return;
    const attributes = { 'chorus.ec.item': item, 'chorus.ec.result': result, 'chorus.bytes': bytes };
    const span = this.tracer.startSpan('ec lookup', { startTime: spanTime(startedAtMs), attributes }, t.context!);
    span.end(spanTime());
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
    if (to === 'main' || t.linkedOut.has(to)) return undefined;
    t.linkedOut.add(to);
    return this.#made(t) ? traceparentOf(t.span!) : undefined;
  }

  /**
   * The request ended in this stage (finished, failed, aborted or dropped). Its span closes in a microtask, not
   * here: a core frees a request inside the step that finished it and records that step after, so the request's
   * last step (Code2Wav's last chunk, the Thinker's last token) still counts and lies within its stage span.
   */
  end(requestId: string, status: string, error?: { code: string; message: string }): void {
    const t = this.#traced.get(requestId);
    if (!t || t.ending) return;
    t.ending = { status, ...(error ? { error } : {}) };
    if (this.#closeQueued) return;
    this.#closeQueued = true;
    queueMicrotask(() => this.#closeEnded());
  }

  /** The stage span made (from addedAt) if it is not yet; false when the SDK does not record it (then forgotten). */
  #made(t: Traced): boolean {
    if (t.span) return true;
    const span = this.tracer.startSpan(
      `stage ${this.stageId}`,
      {
        startTime: t.addedAt,
        attributes: {
          'chorus.stage': this.stageId,
          'chorus.instance': this.instance,
          'chorus.request_id': t.requestId,
        },
      },
      t.parent,
    );
    if (!span.isRecording()) {
      this.#traced.delete(t.requestId);
      return false;
    }
    t.span = span;
    t.context = trace.setSpan(ROOT_CONTEXT, span);
    return true;
  }

  /** What the request noted, made: its stage span, its queue span once it ended, first hops, the first chunk out. */
  #catchUp(t: Traced): Traced | null {
    if (!this.#made(t)) return null;
    const context = t.context!;
    if (!t.queueDone && t.queueEnd) {
      this.tracer.startSpan('queue', { startTime: t.addedAt }, context).end(t.queueEnd);
      t.queueDone = true;
    }
    for (const hop of t.hops) {
      const span = this.tracer.startSpan(
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
        context,
      );
      span.end(hop.receivedAtMs);
    }
    t.hops = [];
    if (t.firstOut) {
      t.span!.addEvent('first_chunk_out', { 'chorus.edge.to': t.firstOut.to }, t.firstOut.at);
      t.firstOut = null;
    }
    return t;
  }

  #closeEnded(): void {
    this.#closeQueued = false;
    const now = spanTime();
    for (const [requestId, t] of this.#traced) {
      if (!t.ending) continue;
      this.#traced.delete(requestId);
      // Ended before any step served it (aborted in the queue, refused at admission): its queue ends now.
      t.queueEnd ??= now;
      if (!this.#catchUp(t)) continue;
      t.span!.setAttributes({
        'chorus.status': t.ending.status,
        'chorus.steps': t.steps,
        'chorus.positions': t.positions,
        'chorus.chunks_in': t.chunksIn,
        'chorus.bytes_in': t.bytesIn,
        'chorus.slowest_hop_ms': t.slowestHopMs,
        'chorus.chunks_out': t.chunksOut,
      });
      const error = t.ending.error;
      if (error) t.span!.setStatus({ code: SpanStatusCode.ERROR, message: `${error.code}: ${error.message}` });
      t.span!.end(now);
    }
  }
}
