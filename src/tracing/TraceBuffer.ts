/**
 * The last traces main has seen, in memory, for the playground's waterfall (`chorus serve --trace-buffer N`): spans
 * from main and from every stage process (they export a copy to main, traceSink.ts), grouped by trace.
 *
 * Bounded twice: at most maxTraces traces and maxBytes of spans (each span counted as its JSON). A new trace, or a
 * span that would pass the byte budget, evicts the oldest traces (by first span seen); a single trace that alone
 * would pass the budget keeps what it has and drops its further spans, counted in droppedSpans, so a runaway answer
 * cannot push every other trace out or grow memory.
 */
import type { FlatSpan } from './otlpSpans.ts';

export interface TraceBufferLimits {
  readonly maxTraces: number;
  readonly maxBytes: number;
}

/** One trace as the list shows it. */
export interface TraceSummary {
  readonly traceId: string;
  /** The answers' root spans (chat.completion, realtime.response...): their names and request ids. */
  readonly roots: readonly { readonly name: string; readonly requestId: string | null }[];
  readonly startMs: number;
  readonly endMs: number;
  readonly spans: number;
  /** The processes that sent spans: main, thinker#0... */
  readonly instances: readonly string[];
  readonly droppedSpans: number;
}

interface Stored {
  readonly spans: FlatSpan[];
  bytes: number;
  droppedSpans: number;
}

/** A root span of an answer: the one main makes per chat completion or Realtime response (responseSpan.ts). */
const isAnswerRoot = (s: FlatSpan): boolean => s.attributes['chorus.protocol'] !== undefined;

export class TraceBuffer {
  readonly #traces = new Map<string, Stored>();
  #bytes = 0;

  constructor(readonly limits: TraceBufferLimits) {
    if (!(limits.maxTraces >= 1) || !(limits.maxBytes >= 1))
      throw new RangeError(`trace buffer limits must be at least 1 (got ${limits.maxTraces}, ${limits.maxBytes})`);
  }

  get size(): number {
    return this.#traces.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  add(spans: readonly FlatSpan[]): void {
    for (const span of spans) this.#addOne(span);
  }

  #addOne(span: FlatSpan): void {
    const bytes = Buffer.byteLength(JSON.stringify(span));
    let stored = this.#traces.get(span.traceId);
    if (!stored) {
      while (this.#traces.size >= this.limits.maxTraces) this.#evictOldest();
      stored = { spans: [], bytes: 0, droppedSpans: 0 };
      this.#traces.set(span.traceId, stored);
    }
    if (stored.bytes + bytes > this.limits.maxBytes) {
      stored.droppedSpans++; // this trace alone would fill the budget
      return;
    }
    while (this.#bytes + bytes > this.limits.maxBytes) this.#evictOldest(span.traceId);
    stored.spans.push(span);
    stored.bytes += bytes;
    this.#bytes += bytes;
  }

  /** Drops the oldest trace other than `keep`. */
  #evictOldest(keep?: string): void {
    for (const [traceId, stored] of this.#traces) {
      if (traceId === keep) continue;
      this.#traces.delete(traceId);
      this.#bytes -= stored.bytes;
      return;
    }
  }

  /** Newest first; with a request id, only the traces with an answer of that id. */
  list(filter: { readonly requestId?: string } = {}): TraceSummary[] {
    const out: TraceSummary[] = [];
    for (const [traceId, stored] of this.#traces) {
      if (stored.spans.length === 0) continue; // its one span was over the budget alone
      const roots = stored.spans.filter(isAnswerRoot).map((s) => ({
        name: s.name,
        requestId: typeof s.attributes['chorus.request_id'] === 'string' ? s.attributes['chorus.request_id'] : null,
      }));
      if (filter.requestId !== undefined && !roots.some((r) => r.requestId === filter.requestId)) continue;
      out.push({
        traceId,
        roots,
        startMs: Math.min(...stored.spans.map((s) => s.startMs)),
        endMs: Math.max(...stored.spans.map((s) => s.endMs)),
        spans: stored.spans.length,
        instances: [...new Set(stored.spans.map((s) => s.instance))],
        droppedSpans: stored.droppedSpans,
      });
    }
    return out.reverse();
  }

  /** One trace's spans in start order, or null when it is not (or no longer) here. */
  get(traceId: string): { readonly spans: readonly FlatSpan[]; readonly droppedSpans: number } | null {
    const stored = this.#traces.get(traceId.toLowerCase());
    if (!stored) return null;
    return { spans: [...stored.spans].sort((a, b) => a.startMs - b.startMs), droppedSpans: stored.droppedSpans };
  }
}
