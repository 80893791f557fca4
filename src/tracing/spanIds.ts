/**
 * Span ids chosen before their spans exist. A stage hands its span's context to the next stage in the request's first
 * chunk, long before it makes that span (spans are made when the stage is idle, StageSpans): it reserves an id, puts
 * it in the chunk's `traceparent`, and gives it to the span made later. This is the provider's IdGenerator (the SDK's
 * extension point for ids): random ids as the SDK's own, except for the one span startWith() makes.
 */
import type { IdGenerator } from '@opentelemetry/sdk-trace-base';
import { otelSdk } from './otelSdk.ts';

export class ReservedSpanIds implements IdGenerator {
  readonly #random = new (otelSdk().RandomIdGenerator)();
  #next: string | null = null;

  generateTraceId(): string {
    return this.#random.generateTraceId();
  }

  generateSpanId(): string {
    const reserved = this.#next;
    if (reserved === null) return this.#random.generateSpanId();
    this.#next = null;
    return reserved;
  }

  /** A span id for a span to be made later with startWith(). */
  reserve(): string {
    return this.#random.generateSpanId();
  }

  /** Runs `make`, which starts one span (the tracer's first id request): that span gets `id`. */
  startWith<T>(id: string, make: () => T): T {
    this.#next = id;
    try {
      return make();
    } finally {
      this.#next = null;
    }
  }
}
