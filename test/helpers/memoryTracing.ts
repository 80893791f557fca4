/** A process's tracing as startTracing() builds it, its spans kept in memory (the SDK's InMemorySpanExporter). */
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { ReservedSpanIds } from '../../src/tracing/spanIds.ts';
import type { Tracing } from '../../src/tracing/tracing.ts';

export interface MemoryTracing {
  readonly tracing: Tracing;
  /** The spans ended so far. */
  spans(): ReadableSpan[];
  reset(): void;
}

/** `sampled` false: an always-off sampler (nothing is recorded). */
export function memoryTracing(sampled = true): MemoryTracing {
  const exporter = new InMemorySpanExporter();
  const ids = new ReservedSpanIds();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
    idGenerator: ids,
    ...(sampled ? {} : { sampler: new AlwaysOffSampler() }),
  });
  const tracing: Tracing = {
    tracer: provider.getTracer('test'),
    ids,
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
  return { tracing, spans: () => exporter.getFinishedSpans(), reset: () => exporter.reset() };
}
