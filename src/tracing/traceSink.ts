/**
 * Main's loopback OTLP/HTTP receiver for its trace buffer: main and the stage processes it starts export a copy of
 * their spans here (tracing.ts reads CHORUS_TRACE_SINK_URL / _TOKEN from the environment they inherit).
 *
 * Why a listener of its own and not the server's POST /v1/traces: the stages start, and their tracing with them,
 * before the server listens, and on `--port 0` its port is not known yet; behind TLS an exporter would also have to
 * trust the server's certificate. This one listens on 127.0.0.1 from the start, and a random token (sent as a bearer
 * header) keeps other local processes out. Stages on another host send to the server's own route (traceRoutes.ts).
 *
 * JSON only: the OTLP exporters here are told to send JSON, and no installed OpenTelemetry package decodes a protobuf
 * export request (otlp-transformer 0.2xx only encodes them).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { logger, type Logger } from '../common/log.ts';
import { OtlpShapeError, spansOfExport } from './otlpSpans.ts';
import type { TraceBuffer } from './TraceBuffer.ts';
import { TRACE_SINK_TOKEN_ENV, TRACE_SINK_URL_ENV } from './tracing.ts';

/** An export batch of 512 spans is ~0.5 MB of JSON; anything far larger is not from our exporters. */
export const MAX_EXPORT_BYTES = 8 * 1024 * 1024;

export interface TraceSink {
  /** The variables that point a process's tracing at this sink (set them before the stages start). */
  readonly env: Readonly<Record<string, string>>;
  close(): Promise<void>;
}

/** The outcome of one OTLP/HTTP export body: the status to answer and what to say. */
export function ingestExport(
  buffer: TraceBuffer,
  contentType: string | undefined,
  body: unknown,
): { status: number; message: string } {
  const refused = refusedContentType(contentType);
  if (refused) return refused;
  try {
    buffer.add(spansOfExport(body));
    return { status: 200, message: '' };
  } catch (err) {
    if (err instanceof OtlpShapeError) return { status: 400, message: `not an OTLP trace export: ${err.message}` };
    throw err;
  }
}

function refusedContentType(contentType: string | undefined): { status: number; message: string } | null {
  if (contentType?.startsWith('application/json')) return null;
  return {
    status: 415,
    message:
      `OTLP export as ${contentType ?? 'no content-type'} is not accepted: send http/json ` +
      '(OTEL_EXPORTER_OTLP_PROTOCOL=http/json)',
  };
}

function answer(res: ServerResponse, status: number, message: string): void {
  // OTLP/HTTP: a success is an ExportTraceServiceResponse (empty: nothing rejected); a failure carries a Status.
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(status === 200 ? {} : { message }));
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const parts: Buffer[] = [];
  let bytes = 0;
  // Past the limit the rest is read and dropped, not kept: leaving the loop would destroy the socket before the 413.
  for await (const part of req as AsyncIterable<Buffer>) {
    bytes += part.length;
    if (bytes > maxBytes) parts.length = 0;
    else parts.push(part);
  }
  return bytes > maxBytes ? null : Buffer.concat(parts);
}

export async function startTraceSink(buffer: TraceBuffer, log: Logger = logger): Promise<TraceSink> {
  const token = randomBytes(24).toString('hex');
  const expected = Buffer.from(`Bearer ${token}`);
  const authorized = (header: string | undefined): boolean => {
    const got = Buffer.from(header ?? '');
    return got.length === expected.length && timingSafeEqual(got, expected);
  };
  const server = createServer((req, res) => {
    const refused =
      req.method !== 'POST' || req.url !== '/v1/traces'
        ? { status: 404, message: 'POST /v1/traces only' }
        : !authorized(req.headers.authorization)
          ? { status: 401, message: 'wrong or missing sink token' }
          : refusedContentType(req.headers['content-type']);
    if (refused) {
      req.resume(); // the body read and dropped, so the answer is not cut off by a reset
      return answer(res, refused.status, refused.message);
    }
    readBody(req, MAX_EXPORT_BYTES).then(
      (raw) => {
        if (raw === null) return answer(res, 413, `an export over ${MAX_EXPORT_BYTES} bytes is refused`);
        let body: unknown;
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          return answer(res, 400, 'the body is not JSON');
        }
        const { status, message } = ingestExport(buffer, req.headers['content-type'], body);
        if (status !== 200) log.warn({ status, message }, 'trace sink: export refused');
        answer(res, status, message);
      },
      (err: unknown) => {
        log.warn({ err }, 'trace sink: export body failed');
        if (!res.headersSent) answer(res, 400, 'the body could not be read');
      },
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  log.info({ port, maxTraces: buffer.limits.maxTraces, maxBytes: buffer.limits.maxBytes }, 'trace buffer on');
  return {
    env: { [TRACE_SINK_URL_ENV]: `http://127.0.0.1:${port}/v1/traces`, [TRACE_SINK_TOKEN_ENV]: token },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
