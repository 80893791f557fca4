/**
 * The trace buffer and its loopback sink: real spans from the OpenTelemetry SDK, encoded by the exporter's own JSON
 * serializer, decoded into the buffer's records; the bounds (traces, bytes, one trace over the budget alone) and
 * eviction order; the sink's refusals (no token, not JSON, over the limit, not an OTLP export).
 */
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import { afterAll, describe, expect, it } from 'vitest';
import { OtlpShapeError, spansOfExport, type FlatSpan } from '../../src/tracing/otlpSpans.ts';
import { TraceBuffer } from '../../src/tracing/TraceBuffer.ts';
import { MAX_EXPORT_BYTES, startTraceSink } from '../../src/tracing/traceSink.ts';
import { TRACE_SINK_TOKEN_ENV, TRACE_SINK_URL_ENV } from '../../src/tracing/tracing.ts';

const exported = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  resource: resourceFromAttributes({ 'service.name': 'chorus', 'service.instance.id': 'talker#0' }),
  spanProcessors: [new SimpleSpanProcessor(exported)],
});
const tracer = provider.getTracer('test');
afterAll(() => provider.shutdown());

/** One answer's spans as the SDK records them: a root with a first_audio event, a child step, a failed child. */
function answer(requestId: string): ReadableSpan[] {
  exported.reset();
  const root = tracer.startSpan('realtime.response', {
    startTime: 1_700_000_000_000,
    attributes: { 'chorus.protocol': 'realtime', 'chorus.request_id': requestId, 'chorus.modalities': ['text'] },
  });
  const under = trace.setSpan(ROOT_CONTEXT, root);
  tracer
    .startSpan('prefill step', { startTime: 1_700_000_000_010, attributes: { 'chorus.batch_size': 2 } }, under)
    .end(1_700_000_000_012.5);
  const failed = tracer.startSpan('stage talker', { startTime: 1_700_000_000_011 }, under);
  failed.setStatus({ code: SpanStatusCode.ERROR, message: 'x' });
  failed.end(1_700_000_000_030);
  root.addEvent('first_audio', 1_700_000_000_020);
  root.end(1_700_000_000_040);
  return exported.getFinishedSpans();
}

/** The body the OTLP/HTTP JSON exporter would post. */
function exportBody(spans: ReadableSpan[]): unknown {
  return JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans)!).toString('utf8'));
}

function span(traceId: string, spanId: string, pad = 0): FlatSpan {
  return {
    traceId,
    spanId,
    parentSpanId: '',
    name: 'x'.repeat(pad),
    startMs: 1,
    endMs: 2,
    instance: 'main',
    attributes: {},
    events: [],
    error: false,
  };
}

const bytesOf = (s: FlatSpan) => Buffer.byteLength(JSON.stringify(s));

describe('spansOfExport', () => {
  it("decodes the SDK exporter's JSON: ids, parents, ms times, attributes, events, status, the process", () => {
    const spans = answer('resp_1');
    const flat = spansOfExport(exportBody(spans));
    const root = flat.find((s) => s.name === 'realtime.response')!;
    const step = flat.find((s) => s.name === 'prefill step')!;
    const stage = flat.find((s) => s.name === 'stage talker')!;
    expect(root).toMatchObject({
      traceId: spans[0].spanContext().traceId,
      parentSpanId: '',
      startMs: 1_700_000_000_000,
      endMs: 1_700_000_000_040,
      instance: 'talker#0',
      attributes: { 'chorus.protocol': 'realtime', 'chorus.request_id': 'resp_1', 'chorus.modalities': ['text'] },
      events: [{ name: 'first_audio', atMs: 1_700_000_000_020 }],
      error: false,
    });
    expect(step).toMatchObject({ parentSpanId: root.spanId, attributes: { 'chorus.batch_size': 2 } });
    expect(step.endMs - step.startMs).toBeCloseTo(2.5, 3);
    expect(stage.error).toBe(true);
  });

  it('refuses a body that is not an OTLP trace export, naming the field', () => {
    expect(() => spansOfExport('spans')).toThrow(OtlpShapeError);
    expect(() => spansOfExport({ resourceSpans: {} })).toThrow(/resourceSpans must be an array/);
    const bad = { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'zz', spanId: '01' }] }] }] };
    expect(() => spansOfExport(bad)).toThrow(/spans\[0\]\.traceId must be a hex string/);
    const noTime = { resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'ab', spanId: '01' }] }] }] };
    expect(() => spansOfExport(noTime)).toThrow(/startTimeUnixNano/);
    expect(spansOfExport({})).toEqual([]);
  });
});

describe('TraceBuffer', () => {
  it('keeps at most maxTraces, evicting the oldest first, and lists the newest first', () => {
    const buffer = new TraceBuffer({ maxTraces: 2, maxBytes: 1 << 20 });
    buffer.add([span('a1', '01'), span('b2', '02'), span('a1', '03')]);
    buffer.add([span('c3', '04')]);
    expect(buffer.list().map((t) => t.traceId)).toEqual(['c3', 'b2']);
    expect(buffer.get('a1')).toBeNull();
    expect(buffer.bytes).toBe(bytesOf(span('b2', '02')) + bytesOf(span('c3', '04')));
  });

  it('keeps within maxBytes by evicting older traces, never the one growing', () => {
    const one = bytesOf(span('a1', '01', 100));
    const buffer = new TraceBuffer({ maxTraces: 10, maxBytes: 3 * one });
    buffer.add([span('a1', '01', 100), span('b2', '02', 100), span('c3', '03', 100)]);
    buffer.add([span('c3', '04', 100)]); // a fourth span: the oldest trace goes
    expect(buffer.list().map((t) => t.traceId)).toEqual(['c3', 'b2']);
    expect(buffer.bytes).toBeLessThanOrEqual(3 * one);
    buffer.add([span('c3', '05', 100), span('c3', '06', 100)]); // c3 alone fills it: b2 goes, then c3 drops spans
    expect(buffer.list()).toEqual([expect.objectContaining({ traceId: 'c3', spans: 3, droppedSpans: 1 })]);
    expect(buffer.bytes).toBe(3 * one);
  });

  it('finds a trace by the request id of its answer root, and returns its spans in start order', () => {
    const buffer = new TraceBuffer({ maxTraces: 4, maxBytes: 1 << 20 });
    buffer.add(spansOfExport(exportBody(answer('resp_a'))));
    buffer.add(spansOfExport(exportBody(answer('resp_b'))));
    const [found] = buffer.list({ requestId: 'resp_a' });
    expect(found.roots).toEqual([{ name: 'realtime.response', requestId: 'resp_a' }]);
    expect(found).toMatchObject({ spans: 3, instances: ['talker#0'], startMs: 1_700_000_000_000 });
    expect(buffer.list({ requestId: 'resp_c' })).toEqual([]);
    const starts = buffer.get(found.traceId.toUpperCase())!.spans.map((s) => s.startMs);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it('refuses limits under 1', () => {
    expect(() => new TraceBuffer({ maxTraces: 0, maxBytes: 10 })).toThrow(RangeError);
  });
});

describe('the trace sink', () => {
  it('takes exports with its token only, and refuses what it cannot keep with a status that says why', async () => {
    const buffer = new TraceBuffer({ maxTraces: 4, maxBytes: 1 << 20 });
    const sink = await startTraceSink(buffer);
    try {
      const url = sink.env[TRACE_SINK_URL_ENV];
      const auth = { authorization: `Bearer ${sink.env[TRACE_SINK_TOKEN_ENV]}`, 'content-type': 'application/json' };
      const post = (body: string | Buffer, headers: Record<string, string> = auth) =>
        fetch(url, { method: 'POST', headers, body });
      const body = JSON.stringify(exportBody(answer('resp_s')));
      expect((await post(body, { 'content-type': 'application/json' })).status).toBe(401);
      expect((await post(body, { ...auth, authorization: 'Bearer wrong' })).status).toBe(401);
      expect(buffer.size).toBe(0);
      expect((await post(body)).status).toBe(200);
      expect(buffer.list({ requestId: 'resp_s' })).toHaveLength(1);
      const proto = await post(Buffer.from([1, 2]), { ...auth, 'content-type': 'application/x-protobuf' });
      expect(proto.status).toBe(415);
      expect(((await proto.json()) as { message: string }).message).toMatch(/http\/json/);
      expect((await post('{"resourceSpans": 3}')).status).toBe(400);
      expect((await post('not json')).status).toBe(400);
      const big = await post(Buffer.alloc(MAX_EXPORT_BYTES + 1, 0x20));
      expect(big.status).toBe(413);
      expect(buffer.size).toBe(1);
    } finally {
      await sink.close();
    }
  });
});
