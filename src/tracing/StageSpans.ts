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
 * Bounded: decode steps are recorded one in DECODE_STEP_SPAN_EVERY (per process, so a batch shares them), prefill
 * and run steps always (a few per request). The SDK's BatchSpanProcessor exports off the step loop.
 */
import {
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { spanTime } from './spanClock.ts';
import { contextFromTraceparent, traceparentOf } from './traceContext.ts';

/** One decode step span in this many (a 100-token answer: ~13 in the Thinker instead of 100). */
export const DECODE_STEP_SPAN_EVERY = 8;

export type TracedStepPhase = 'prefill' | 'decode' | 'run';

/** An encoder-output store lookup's outcome (ecLookup). */
export type EcLookupResult = 'miss' | 'local' | 'redis' | 'lost' | 'failed';

/** Span names by step phase, made once (a name per step span would be a string per step). */
const STEP_SPAN_NAMES: Readonly<Record<TracedStepPhase, string>> = {
  prefill: 'prefill step',
  decode: 'decode step',
  run: 'run step',
};

interface Traced {
  readonly span: Span;
  /** The context whose active span is `span`: the parent of the request's spans here, made once per request. */
  readonly context: Context;
  queue: Span | null;
  steps: number;
  positions: number;
  chunksIn: number;
  bytesIn: number;
  slowestHopMs: number;
  chunksOut: number;
  /** Input edges whose first hop has its span. */
  readonly hopped: Set<string>;
  /** Output edges (consumer stage ids) whose first chunk carried this span's trace context. */
  readonly linkedOut: Set<string>;
  /** Set by end(): how it ended; the span closes once the step in progress (if any) is recorded. */
  ending: { readonly status: string; readonly error?: { code: string; message: string } } | null;
}

export class StageSpans {
  readonly #traced = new Map<string, Traced>();
  #decodeSteps = 0;
  #closeQueued = false;

  constructor(
    private readonly tracer: Tracer,
    private readonly stageId: string,
    private readonly instance: string,
    /** Upstream stage id -> the kind of connector its edge to this stage runs on (shm, redis...). */
    private readonly edgeTransports: ReadonlyMap<string, string> = new Map(),
  ) {}

  /** A request admitted: its stage and queue spans start, when it has a sampled trace context. */
  add(requestId: string, traceparent: string | undefined): void {
    if (traceparent === undefined) return;
    const previous = this.#traced.get(requestId);
    if (previous && !previous.ending) return; // a duplicate add
    if (previous) this.#closeEnded(); // the id ended and comes back before its span closed: close it first
    const parent = contextFromTraceparent(traceparent);
    if (!trace.getSpanContext(parent)) return; // malformed: nothing to join
    const now = spanTime();
    const span = this.tracer.startSpan(
      `stage ${this.stageId}`,
      {
        startTime: now,
        attributes: {
          'chorus.stage': this.stageId,
          'chorus.instance': this.instance,
          'chorus.request_id': requestId,
        },
      },
      parent,
    );
    if (!span.isRecording()) return; // the root was not sampled
    const context = trace.setSpan(ROOT_CONTEXT, span);
    const queue = this.tracer.startSpan('queue', { startTime: now }, context);
    this.#traced.set(requestId, {
      span,
      context,
      queue,
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
    const hop = this.tracer.startSpan(
      'chunk hop',
      {
        startTime: sentAtMs,
        ...(producerSpan ? { links: [{ context: producerSpan }] } : {}),
        attributes: {
          'chorus.edge.from': from,
          'chorus.edge.to': this.stageId,
          'chorus.bytes': bytes,
          ...(this.edgeTransports.has(from) ? { 'chorus.edge.transport': this.edgeTransports.get(from) } : {}),
        },
      },
      t.context,
    );
    hop.end(receivedAtMs);
  }

  /**
   * A step ran from startedAtMs (performance.now()) until now, serving these requests' positions. It runs after every
   * step of the stage, so it allocates only for a step it records: a decode step not recorded costs the counters.
   */
  step(phase: TracedStepPhase, startedAtMs: number, items: readonly (readonly [string, number])[]): void {
    if (this.#traced.size === 0) return;
    const record = phase !== 'decode' || this.#decodeSteps % DECODE_STEP_SPAN_EVERY === 0;
    let first: Traced | null = null;
    let links: Link[] | null = null;
    let positions = 0;
    for (const [requestId, n] of items) {
      const t = this.#traced.get(requestId);
      if (!t) continue;
      t.steps++;
      t.positions += n;
      if (t.queue) {
        t.queue.end(spanTime(startedAtMs));
        t.queue = null;
      }
      positions += n;
      if (first === null) first = t;
      else if (record) (links ??= []).push({ context: t.span.spanContext() });
    }
    if (first === null) return;
    if (phase === 'decode') this.#decodeSteps++;
    if (!record) return;
    const attributes = { 'chorus.batch_size': items.length, 'chorus.positions': positions };
    const startTime = spanTime(startedAtMs);
    const options = links ? { startTime, links, attributes } : { startTime, attributes };
    this.tracer.startSpan(STEP_SPAN_NAMES[phase], options, first.context).end(spanTime());
  }

  /**
   * One of the request's media items looked up in the encoder-output store: `miss` (main sent it to an encoder), or
   * a hit whose rows were taken from this process's copy (`local`), Redis (`redis`), were gone (`lost`) or could not
   * be read (`failed`), from
   * startedAtMs (performance.now()) until now.
   */
  ecLookup(requestId: string, item: number, result: EcLookupResult, startedAtMs: number, bytes: number): void {
    const t = this.#traced.get(requestId);
    if (!t) return;
    const attributes = { 'chorus.ec.item': item, 'chorus.ec.result': result, 'chorus.bytes': bytes };
    const span = this.tracer.startSpan('ec lookup', { startTime: spanTime(startedAtMs), attributes }, t.context);
    span.end(spanTime());
  }

  /**
   * A chunk of the request put to `to`; the first is an event on the stage span. Returns the stage span's trace
   * context for the first chunk to each consumer (the chunk carries it: ChunkMeta.traceparent), else undefined.
   */
  chunkOut(requestId: string, to: string): string | undefined {
    const t = this.#traced.get(requestId);
    if (!t) return undefined;
    if (t.chunksOut++ === 0) t.span.addEvent('first_chunk_out', { 'chorus.edge.to': to }, spanTime());
    if (t.linkedOut.has(to)) return undefined;
    t.linkedOut.add(to);
    return traceparentOf(t.span);
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

  #closeEnded(): void {
    this.#closeQueued = false;
    const now = spanTime();
    for (const [requestId, t] of this.#traced) {
      if (!t.ending) continue;
      this.#traced.delete(requestId);
      t.queue?.end(now);
      t.span.setAttributes({
        'chorus.status': t.ending.status,
        'chorus.steps': t.steps,
        'chorus.positions': t.positions,
        'chorus.chunks_in': t.chunksIn,
        'chorus.bytes_in': t.bytesIn,
        'chorus.slowest_hop_ms': t.slowestHopMs,
        'chorus.chunks_out': t.chunksOut,
      });
      const error = t.ending.error;
      if (error) t.span.setStatus({ code: SpanStatusCode.ERROR, message: `${error.code}: ${error.message}` });
      t.span.end(now);
    }
  }
}
