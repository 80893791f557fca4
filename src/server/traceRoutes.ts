/**
 * The trace buffer over HTTP, behind the API key like every other route (security.ts):
 *
 *   GET  /v1/traces[?request_id=ID]  the traces kept, newest first (one line each: roots, time, processes)
 *   GET  /v1/traces/:traceId         one trace's spans, for the playground's waterfall
 *   POST /v1/traces                  an OTLP/HTTP JSON export: a stage on another host points its
 *                                    OTEL_EXPORTER_OTLP_ENDPOINT at this server (with the key in
 *                                    OTEL_EXPORTER_OTLP_HEADERS) so its spans join the buffer
 *
 * Without a buffer (the default) each answers 404 saying how to turn it on, rather than an empty list that would
 * look like "no traces".
 */
import type { FastifyInstance } from 'fastify';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { ingestExport } from '../tracing/traceSink.ts';
import type { TraceBuffer } from '../tracing/TraceBuffer.ts';

const OFF_MESSAGE = 'this server keeps no traces: start it with chorus serve --trace-buffer N (docs/tracing.md)';

export function registerTraceRoutes(app: FastifyInstance, buffer: TraceBuffer | null): void {
  const kept = (): TraceBuffer => {
    if (!buffer) throw new ChorusError(ErrorCodes.NOT_FOUND, OFF_MESSAGE);
    return buffer;
  };
  app.get<{ Querystring: Record<string, unknown> }>('/v1/traces', async (request) => {
    const unknown = Object.keys(request.query ?? {}).filter((k) => k !== 'request_id');
    if (unknown.length > 0)
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `GET /v1/traces takes request_id only, not ${unknown.slice(0, 3).join(', ')}`,
      );
    const requestId = request.query.request_id;
    const traces = kept().list(typeof requestId === 'string' ? { requestId } : {});
    return { object: 'list', data: traces };
  });
  app.get<{ Params: { traceId: string } }>('/v1/traces/:traceId', async (request) => {
    const trace = kept().get(request.params.traceId);
    if (!trace)
      throw new ChorusError(
        ErrorCodes.NOT_FOUND,
        `trace ${request.params.traceId.slice(0, 64)} is not in the buffer (never seen, or evicted by newer ones): ` +
          'GET /v1/traces lists those kept',
      );
    return { trace_id: request.params.traceId.toLowerCase(), dropped_spans: trace.droppedSpans, spans: trace.spans };
  });
  app.post('/v1/traces', async (request, reply) => {
    const { status, message } = ingestExport(kept(), request.headers['content-type'], request.body);
    if (status === 200) return reply.send({});
    throw new ChorusError(ErrorCodes.REQUEST_INVALID, message);
  });
}
