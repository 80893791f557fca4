/**
 * `chorus serve --trace-buffer N [--trace-buffer-bytes N]`: main keeps the last N traces for GET /v1/traces and the
 * playground's waterfall (docs/tracing.md). The buffer's loopback receiver is named in `env` (the process's own, by
 * default), which main's tracing and the stage processes started after this read.
 */
import { TraceBuffer } from '../tracing/TraceBuffer.ts';
import { startTraceSink, type TraceSink } from '../tracing/traceSink.ts';
import { TRACE_SINK_URL_ENV, tracingConfigured } from '../tracing/tracing.ts';
import { UsageError } from '../common/cliArgs.ts';

/**
 * 16 MiB. A span takes ~350 bytes (measured: an 8-token spoken answer, 19 spans, 6.6 kB), a 100-token answer's 61
 * spans ~21 kB: ~800 such answers.
 */
export const DEFAULT_TRACE_BUFFER_BYTES = 16 * 1024 * 1024;

/** Null without --trace-buffer; refused: --trace-buffer-bytes alone, or beside settings that turn tracing off. */
export async function traceBufferFromFlags(
  traces: number | undefined,
  bytes: number | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ buffer: TraceBuffer; sink: TraceSink } | null> {
  if (traces === undefined) {
    if (bytes !== undefined) throw new UsageError('--trace-buffer-bytes needs --trace-buffer N');
    return null;
  }
  if (!tracingConfigured({ ...env, [TRACE_SINK_URL_ENV]: 'http://127.0.0.1/' }))
    throw new UsageError(
      '--trace-buffer needs tracing, which OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turns off: unset it',
    );
  const buffer = new TraceBuffer({ maxTraces: traces, maxBytes: bytes ?? DEFAULT_TRACE_BUFFER_BYTES });
  const sink = await startTraceSink(buffer);
  Object.assign(env, sink.env);
  return { buffer, sink };
}
