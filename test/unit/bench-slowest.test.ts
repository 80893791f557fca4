/**
 * The bench names its slowest first packets with the trace id its client sent (issue 34): which requests, in which
 * order, what a failed or audio-less request counts for, and how the report lists them.
 */
import { describe, expect, it } from 'vitest';
import { RealtimeBenchClient } from '../../bench/ttfp/clients/RealtimeBenchClient.ts';
import { newTraceparent } from '../../bench/ttfp/clients/traceparent.ts';
import { slowestByTtfp, summarizeRun } from '../../bench/ttfp/metrics.ts';
import { slowestLines } from '../../bench/ttfp/report/formatReport.ts';
import { toRunRow } from '../../bench/ttfp/results.ts';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';
import { contextFromTraceparent } from '../../src/tracing/traceContext.ts';
import { trace as otelTrace } from '@opentelemetry/api';

function request(id: string, ttfpMs: number | null, ok = true): RequestTrace {
  const events: RequestTrace['events'] = [
    { type: 'text', atMs: 105 },
    ...(ttfpMs === null ? [] : [{ type: 'audio' as const, atMs: 100 + ttfpMs, samples: 2400, sampleRateHz: 24000 }]),
    { type: 'done', atMs: 1000 },
  ];
  return { startMs: 100, events, ok, requestId: id, traceId: `trace-${id}` };
}

describe('the slowest first packets', () => {
  it('are the completed requests with audio, latest first, at most the count', () => {
    const traces = [
      request('a', 40),
      request('b', 90),
      request('c', null), // no audio: no first packet to be slow
      request('d', 500, false), // failed: counted, not measured
      request('e', 70),
      request('f', 10),
    ];
    expect(slowestByTtfp(traces, 3)).toEqual([
      { request_id: 'b', trace_id: 'trace-b', ttfp_ms: 90 },
      { request_id: 'e', trace_id: 'trace-e', ttfp_ms: 70 },
      { request_id: 'a', trace_id: 'trace-a', ttfp_ms: 40 },
    ]);
    expect(slowestByTtfp([{ ...request('x', 5), requestId: undefined, traceId: undefined }], 3)).toEqual([
      { request_id: null, trace_id: null, ttfp_ms: 5 },
    ]);
  });

  it('are listed in the report with their trace ids, slowest first', () => {
    const traces = [request('resp_1', 40), request('resp_2', 90)];
    const row = toRunRow(summarizeRun(traces), {
      asyncChunk: true,
      concurrency: 1,
      inputLen: 100,
      outputLen: 100,
      code2wavBatch: null,
      durationMs: 1000,
      traces,
    });
    expect(slowestLines({ runs: [row] })).toEqual([
      'async c=1: resp_2 90.0 ms, trace trace-resp_2',
      'async c=1: resp_1 40.0 ms, trace trace-resp_1',
    ]);
  });

  it('sends a valid, sampled traceparent naming its trace id', () => {
    const { traceparent, traceId } = newTraceparent();
    expect(otelTrace.getSpanContext(contextFromTraceparent(traceparent))).toMatchObject({ traceId, traceFlags: 1 });
    expect(newTraceparent().traceId).not.toBe(traceId);
  });

  it('names each realtime request by a trace of its own, the one its response.create sent', async () => {
    // One session serves every request of a concurrency slot: at c=1 the whole run. The session's traceparent
    // would name them all with one trace id.
    const sent: { response: { metadata: { traceparent: string } } }[] = [];
    const session = {
      send: (e: Record<string, unknown> | string) => sent.push(e as (typeof sent)[number]) > 0,
      answer: (_id: string, startMs: number): Promise<RequestTrace> =>
        Promise.resolve({ startMs, events: [], ok: true }),
      close: () => Promise.resolve(),
    };
    const client = new RealtimeBenchClient(session);
    const r = { prompt: 'hi', outputLen: 4, seed: 0, timeoutMs: 1000 };
    const ids = [(await client.request(r)).traceId, (await client.request(r)).traceId];
    expect(new Set(ids).size).toBe(2);
    const sentIds = sent.map((e) => otelTrace.getSpanContext(contextFromTraceparent(e.response.metadata.traceparent)));
    expect(sentIds.map((c) => c?.traceId)).toEqual(ids);
  });
});
