/**
 * The tracing pieces without a pipeline, through the SDK's in-memory exporter: when the environment turns tracing
 * on, which settings are refused; a stage's spans for a request (queue ends at its first step, one decode step span
 * in STEP_SPAN_EVERY linked to the batch's other requests, the first hop per edge, EC-store lookups,
 * aggregates, untraced and unsampled requests cost nothing); the root span of an answer (attributes from its events,
 * ended by cancel before anyone listened, a refused generate(); its trace id on the handle).
 */
import { trace, ROOT_CONTEXT, type Context, type Tracer } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Engine, GenerateRequest, OutputEvent, RequestHandle } from '../../src/common/engine.ts';
import { isChorusError } from '../../src/common/errors.ts';
import { memoryTracing } from '../helpers/memoryTracing.ts';
import { traceGenerate, tracedEngine } from '../../src/tracing/responseSpan.ts';
import {
  DEFERRED_SPANS,
  MAX_NOTED_SPANS,
  SPANS_PER_IDLE_SLICE,
  STEP_SPAN_EVERY,
  StageSpans,
} from '../../src/tracing/StageSpans.ts';
import { contextFromTraceparent, traceparentOf, traceparentOfContext } from '../../src/tracing/traceContext.ts';
import { startTracing, tracingConfigured, type Tracing } from '../../src/tracing/tracing.ts';

/** A root span's traceparent, as main puts it in the add. */
function rootTraceparent(tracing: Tracing): { traceparent: string; spanId: string } {
  const root = tracing.tracer.startSpan('root');
  return { traceparent: traceparentOf(root)!, spanId: root.spanContext().spanId };
}

const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('tracing from the environment', () => {
  it('is off without an OTLP endpoint, or when disabled', () => {
    expect(tracingConfigured({})).toBe(false);
    expect(tracingConfigured({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })).toBe(true);
    expect(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' })).toBe(true);
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(tracingConfigured({ ...on, OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingConfigured({ ...on, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(startTracing('main', {})).toBeNull();
  });

  it('refuses an exporter or protocol it does not ship, naming the variable', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    const refusal = (env: NodeJS.ProcessEnv) => {
      try {
        startTracing('main', env);
      } catch (err) {
        return isChorusError(err, 'CHORUS_ERR_TRACING_CONFIG') ? err.message : `other error: ${String(err)}`;
      }
      return 'accepted';
    };
    expect(refusal({ ...on, OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/^OTEL_TRACES_EXPORTER=zipkin .*use otlp/);
    expect(refusal({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatch(
      /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc .*http\/json or http\/protobuf/,
    );
    expect(refusal({ ...on, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' })).toMatch(/grpc is not supported/);
    for (const protocol of ['http/json', 'http/protobuf'])
      expect(refusal({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: protocol })).toBe('accepted');
  });
});

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('an unreachable collector', () => {
  it('costs a warning in the log, and the flush still resolves', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const log = pino({ level: 'warn' }, sink);
    const endpoint = `http://127.0.0.1:${await closedPort()}`;
    const tracing = startTracing('main', { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint }, log)!;
    tracing.tracer.startSpan('lost').end();
    await tracing.flush();
    await tracing.shutdown();
    const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(warnings.length).toBeGreaterThan(0);
    for (const w of warnings) {
      expect(w.level).toBe(40); // warn, never error
      expect(w.msg).toMatch(/^tracing: /);
    }
  });
});

describe('the protobuf exporter', () => {
  it('sends OTLP/HTTP protobuf when OTEL_EXPORTER_OTLP_PROTOCOL asks for it', async () => {
    const received: { path: string; type: string; bytes: number }[] = [];
    const server = createHttpServer((req, res) => {
      let bytes = 0;
      req.on('data', (b: Buffer) => (bytes += b.length));
      req.on('end', () => {
        received.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', bytes });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' };
    const tracing = startTracing('main', env)!;
    try {
      tracing.tracer.startSpan('one').end();
      await tracing.flush();
    } finally {
      await tracing.shutdown();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ path: '/v1/traces', type: 'application/x-protobuf' });
    expect(received[0].bytes).toBeGreaterThan(0);
  });
});

describe('trace context', () => {
  it('reads a valid traceparent and ignores malformed ones', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(trace.getSpanContext(contextFromTraceparent(tp))).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      isRemote: true,
    });
    for (const bad of [undefined, 42, '', 'garbage', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`, tp.slice(0, 50)])
      expect(contextFromTraceparent(bad)).toBe(ROOT_CONTEXT);
  });
});

describe('StageSpans', () => {
  it('records a stage span with its queue, steps and first hop under the root, made after the first step', async () => {
    const { tracing, spans } = memoryTracing();
    const root = rootTraceparent(tracing);
    let made = 0;
    const counting = {
      startSpan: (...a: Parameters<Tracer['startSpan']>) => (made++, tracing.tracer.startSpan(...a)),
    } as Tracer;
    const s = new StageSpans(
      { tracer: counting, ids: tracing.ids },
      'talker',
      'talker#0',
      new Map([['thinker', 'shm']]),
    );
    s.add('r1', root.traceparent);
    const sentAt = Date.now() - 1000; // well before the add on either clock (Date's and the spans' drift apart by ms)
    s.arrival('r1', 'thinker', sentAt, sentAt + 2, 100);
    s.arrival('r1', 'thinker', sentAt + 1, sentAt + 9, 50); // aggregated, no span
    const t0 = performance.now();
    s.step('prefill', t0, [['r1', 12]]);
    const toCode2wav = s.chunkOut('r1', 'code2wav');
    s.chunkOut('r1', 'code2wav');
    // Off every request's path: admission, the hop, the step and the chunk out only note; the chunk carries the
    // stage span's context, reserved before the span exists.
    expect(made).toBe(0);
    s.end('r1', 'stop');
    expect(made).toBe(0);
    s.flush();
    expect(made).toBe(4); // the stage span, its queue, the hop, the step
    const byName = new Map(spans().map((x) => [x.name, x]));
    expect([...byName.keys()].sort()).toEqual(['chunk hop', 'prefill step', 'queue', 'stage talker']);
    const stage = byName.get('stage talker')!;
    expect(parentOf(stage)).toBe(root.spanId);
    expect(toCode2wav).toBe(traceparentOfContext(stage.spanContext()));
    for (const child of ['queue', 'prefill step', 'chunk hop'])
      expect(parentOf(byName.get(child)!)).toBe(stage.spanContext().spanId);
    expect(stage.attributes).toMatchObject({
      'chorus.status': 'stop',
      'chorus.steps': 1,
      'chorus.positions': 12,
      'chorus.chunks_in': 2,
      'chorus.bytes_in': 150,
      'chorus.slowest_hop_ms': 8,
      'chorus.chunks_out': 2,
    });
    expect(stage.events.map((e) => e.name)).toEqual(['first_chunk_out']);
    expect(byName.get('chunk hop')!.attributes).toMatchObject({
      'chorus.edge.from': 'thinker',
      'chorus.edge.transport': 'shm',
      'chorus.bytes': 100,
    });
    // The first chunk was put before the add reached the stage (as over Redis, where the two travel apart): the stage
    // span opens at that put, so it contains its hop; its queue still starts at the add, later.
    const queue = byName.get('queue')!;
    expect(hrTimeToMilliseconds(stage.startTime)).toBe(sentAt);
    expect(hrTimeToMilliseconds(queue.startTime)).toBeGreaterThan(sentAt + 500);
    // The queue ended when its first step started.
    const step = byName.get('prefill step')!;
    expect(queue.endTime).toEqual(step.startTime);
  });

  it("carries the producer's stage span to each consumer in its first chunk; the hop links to it", async () => {
    const { tracing, spans } = memoryTracing();
    const root = rootTraceparent(tracing);
    const thinker = new StageSpans(tracing, 'thinker', 'thinker#0');
    const talker = new StageSpans(tracing, 'talker', 'talker#0');
    thinker.add('r1', root.traceparent);
    talker.add('r1', root.traceparent);
    const toTalker = thinker.chunkOut('r1', 'talker');
    const toMain = thinker.chunkOut('r1', 'main');
    expect(toTalker).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(toMain).toBeUndefined(); // main reads none
    expect(thinker.chunkOut('r1', 'talker')).toBeUndefined(); // later chunks do not
    expect(thinker.chunkOut('r1', 'code2wav')).toBe(toTalker); // the first chunk of every other edge does
    expect(thinker.chunkOut('r2', 'talker')).toBeUndefined(); // an untraced request carries nothing
    const sentAt = Date.now() - 3;
    talker.arrival('r1', 'thinker', sentAt, sentAt + 1, 10, toTalker);
    const other = new StageSpans(tracing, 'code2wav', 'code2wav#0');
    other.add('r1', root.traceparent);
    for (const [i, bad] of ['00-zz-bad-01', 42, { traceparent: toTalker }].entries())
      other.arrival('r1', `edge${i}`, sentAt, sentAt + 1, 10, bad); // untrusted metadata: no link, no error
    for (const s of [thinker, talker, other]) s.end('r1', 'stop');
    for (const s of [thinker, talker, other]) s.flush();
    const thinkerSpan = spans().find((x) => x.name === 'stage thinker')!;
    const hops = spans().filter((x) => x.name === 'chunk hop');
    expect(hops).toHaveLength(4); // made when the requests ended (no step served them)
    const linked = hops.filter((h) => h.links.length > 0);
    expect(linked).toHaveLength(1);
    expect(linked[0].attributes['chorus.edge.to']).toBe('talker');
    expect(linked[0].links[0].context.spanId).toBe(thinkerSpan.spanContext().spanId);
    expect(linked[0].links[0].context.traceId).toBe(thinkerSpan.spanContext().traceId);
  });

  it("records one decode step in STEP_SPAN_EVERY, linked to the batch's other traced requests", async () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'thinker', 'thinker#0');
    for (const id of ['a', 'b', 'c']) s.add(id, rootTraceparent(tracing).traceparent);
    s.add('untraced', undefined);
    const steps = 3 * STEP_SPAN_EVERY;
    for (let i = 0; i < steps; i++)
      s.step('decode', performance.now(), [
        ['a', 1],
        ['untraced', 1],
        ['b', 1],
        ['c', 1],
      ]);
    for (const id of ['a', 'b', 'c', 'untraced']) s.end(id, 'length');
    s.flush();
    const all = spans();
    const decode = all.filter((x) => x.name === 'decode step');
    expect(decode).toHaveLength(3);
    const stageOf = (id: string) => all.find((x) => x.attributes['chorus.request_id'] === id)!;
    for (const d of decode) {
      expect(parentOf(d)).toBe(stageOf('a').spanContext().spanId);
      expect(d.links.map((l) => l.context.spanId)).toEqual(
        [stageOf('b'), stageOf('c')].map((x) => x.spanContext().spanId),
      );
      expect(d.attributes).toMatchObject({ 'chorus.batch_size': 4, 'chorus.positions': 3 });
    }
    expect(stageOf('b').attributes['chorus.steps']).toBe(steps);
    expect(all.filter((x) => x.name.startsWith('stage '))).toHaveLength(3);
  });

  it("records a run step that is a request's first, between the one-in-STEP_SPAN_EVERY ones", async () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'code2wav', 'code2wav#0');
    s.add('a', rootTraceparent(tracing).traceparent);
    s.step('run', performance.now(), [['a', 4]]); // a's first: recorded (and the one in STEP_SPAN_EVERY)
    s.step('run', performance.now(), [['a', 4]]); // not recorded
    s.add('b', rootTraceparent(tracing).traceparent);
    s.step('run', performance.now(), [
      ['a', 4],
      ['b', 4],
    ]); // b's first: recorded
    s.step('run', performance.now(), [['b', 4]]); // not recorded
    for (const id of ['a', 'b']) s.end(id, 'stop');
    s.flush();
    const runs = spans().filter((x) => x.name === 'run step');
    expect(runs.map((r) => r.attributes['chorus.batch_size'])).toEqual([1, 2]);
  });

  it('closes a stage span after the step that ended its request, which it counts and contains', async () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'code2wav', 'code2wav#0');
    s.add('r1', rootTraceparent(tracing).traceparent);
    const started = performance.now();
    s.end('r1', 'stop'); // the core frees the request inside its last step...
    s.step('run', started, [['r1', 25]]); // ...and records that step after
    s.end('r1', 'cancelled'); // a second end changes nothing
    s.flush();
    const stage = spans().find((x) => x.name === 'stage code2wav')!;
    const step = spans().find((x) => x.name === 'run step')!;
    expect(stage.attributes).toMatchObject({ 'chorus.status': 'stop', 'chorus.steps': 1, 'chorus.positions': 25 });
    expect(parentOf(step)).toBe(stage.spanContext().spanId);
    const ns = (t: readonly [number, number]) => BigInt(t[0]) * 1_000_000_000n + BigInt(t[1]);
    expect(ns(step.endTime)).toBeLessThanOrEqual(ns(stage.endTime));
  });

  it('records an EC-store lookup under the stage span, with its outcome and the bytes taken', async () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'thinker', 'thinker#0');
    s.add('r1', rootTraceparent(tracing).traceparent);
    const started = performance.now();
    s.ecLookup('r1', 0, 'miss', started, 0);
    s.ecLookup('r1', 1, 'redis', started, 4096);
    s.ecLookup('untraced', 0, 'local', started, 4096);
    s.end('r1', 'stop');
    s.flush();
    const stage = spans().find((x) => x.name === 'stage thinker')!;
    const lookups = spans().filter((x) => x.name === 'ec lookup');
    expect(lookups.map((l) => l.attributes)).toEqual([
      { 'chorus.ec.item': 0, 'chorus.ec.result': 'miss', 'chorus.bytes': 0 },
      { 'chorus.ec.item': 1, 'chorus.ec.result': 'redis', 'chorus.bytes': 4096 },
    ]);
    for (const l of lookups) expect(parentOf(l)).toBe(stage.spanContext().spanId);
  });

  it('records nothing for a malformed or unsampled parent', async () => {
    const { tracing, spans } = memoryTracing(false);
    const s = new StageSpans(tracing, 'thinker', 'thinker#0');
    s.add('bad', 'not-a-traceparent');
    s.add('unsampled', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
    s.step('prefill', performance.now(), [
      ['bad', 3],
      ['unsampled', 3],
    ]);
    s.end('bad', 'stop');
    s.end('unsampled', 'stop');
    s.flush();
    expect(spans()).toEqual([]);
  });

  it('makes what it noted a slice at a time when idle, and nothing when nothing is noted', () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'thinker', 'thinker#0');
    expect(s.idle(false)).toBe(false);
    const requests = SPANS_PER_IDLE_SLICE; // a stage span, a queue span and a prefill step each: three slices' worth
    for (let i = 0; i < requests; i++) {
      s.add(`r${i}`, rootTraceparent(tracing).traceparent);
      s.step('prefill', performance.now(), [[`r${i}`, 8]]);
      s.end(`r${i}`, 'stop');
    }
    expect(spans()).toEqual([]);
    const slices: number[] = [];
    while (s.idle(false)) slices.push(spans().length - slices.reduce((a, b) => a + b, 0));
    expect(slices.every((n) => n > 0 && n <= SPANS_PER_IDLE_SLICE + 1)).toBe(true); // whole units, about a slice
    expect(slices.length).toBeGreaterThanOrEqual(3);
    expect(spans()).toHaveLength(3 * requests);
    // Every stage span made, under its root, with the id its children name.
    const stages = spans().filter((x) => x.name === 'stage thinker');
    expect(stages).toHaveLength(requests);
    const stageIds = new Set(stages.map((x) => x.spanContext().spanId));
    for (const child of spans().filter((x) => x.name !== 'stage thinker'))
      expect(stageIds.has(parentOf(child)!)).toBe(true);
    expect(s.idle(false)).toBe(false);

    // A request whose queue and steps were made while it ran: its end alone is work for the next idle moment.
    s.add('late', rootTraceparent(tracing).traceparent);
    s.step('prefill', performance.now(), [['late', 8]]);
    while (s.idle(false));
    const before = spans().length;
    s.end('late', 'stop');
    expect(s.idle(false)).toBe(true);
    expect(
      spans()
        .slice(before)
        .map((x) => x.name),
    ).toEqual(['stage thinker']);
    expect(s.idle(false)).toBe(false);
  });

  it('defers them while it serves requests, until DEFERRED_SPANS are noted; then makes them all', () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'talker', 'talker#0');
    s.add('long', rootTraceparent(tracing).traceparent); // in flight throughout
    s.step('prefill', performance.now(), [['long', 4]]); // its queue and the prefill step: 2 noted
    let ended = 0;
    while (!s.idle(true)) {
      // Requests served and ended one after another (a queue, a prefill step and a stage span each)...
      const id = `r${ended++}`;
      s.add(id, rootTraceparent(tracing).traceparent);
      s.step('prefill', performance.now(), [[id, 1]]);
      s.end(id, 'stop');
      expect(spans()).toEqual([]); // ...none made while the stage serves and too few are noted
    }
    expect(2 + 3 * ended).toBeGreaterThanOrEqual(DEFERRED_SPANS);
    expect(2 + 3 * (ended - 1)).toBeLessThan(DEFERRED_SPANS);
    while (s.idle(true)); // then all of them, a slice per idle moment
    expect(spans()).toHaveLength(2 + 3 * ended);
    expect(s.idle(true)).toBe(false);
  });

  it('makes a slice of them after each step beyond MAX_NOTED_SPANS noted, when the stage never idles', () => {
    const { tracing, spans } = memoryTracing();
    const s = new StageSpans(tracing, 'talker', 'talker#0');
    let i = 0;
    const next = () => {
      s.add(`r${i}`, rootTraceparent(tracing).traceparent);
      s.step('prefill', performance.now(), [[`r${i}`, 1]]); // its queue and its prefill step: 2 noted
      i++;
    };
    // Requests admitted and prefilled one after another, never an idle moment.
    while (spans().length === 0) {
      next();
      expect(2 * i).toBeLessThanOrEqual(MAX_NOTED_SPANS + 2);
    }
    expect(2 * i).toBeGreaterThan(MAX_NOTED_SPANS);
    // A slice, not all of them: no step waits for a thousand spans.
    expect(spans().length).toBeLessThanOrEqual(SPANS_PER_IDLE_SLICE + 1);
    for (let k = 0; k < 300; k++) next();
    // From then on a slice a step keeps up: what is noted and not made stays bounded.
    const outstanding = 2 * i - spans().length;
    expect(outstanding).toBeLessThanOrEqual(MAX_NOTED_SPANS + 2);
    expect(outstanding).toBeGreaterThan(MAX_NOTED_SPANS - SPANS_PER_IDLE_SLICE - 2);
    expect(spans().filter((x) => x.name === 'stage talker')).toHaveLength(0); // still running
    s.flush();
    expect(spans()).toHaveLength(2 * i);
  });
});

function fakeHandle(requestId = 'r1'): { handle: RequestHandle; events: Subject<OutputEvent>; cancelled: string[] } {
  const events = new Subject<OutputEvent>();
  const cancelled: string[] = [];
  const handle: RequestHandle = {
    requestId,
    prompt: { text: 7, audio: 0, image: 0, video: 0 },
    events,
    cancel: (reason) => cancelled.push(reason ?? ''),
    pause: () => undefined,
    resume: () => undefined,
  };
  return { handle, events, cancelled };
}

const REQUEST: GenerateRequest = { messages: [{ role: 'user', content: 'hi' }], modalities: ['text', 'audio'] };
const usage = {
  promptTokens: 7,
  promptTokenDetails: { text: 7, audio: 0, image: 0, video: 0 },
  completionTokens: 3,
  cachedTokens: 2,
  audioFrames: 4,
  audioSeconds: 0.32,
};

describe('traceGenerate', () => {
  const info = (parent: Context = ROOT_CONTEXT) => ({ protocol: 'http' as const, name: 'chat.completion', parent });

  it('gives the engine the root span as traceparent and fills the root from the answer', () => {
    const { tracing, spans } = memoryTracing();
    const fake = fakeHandle();
    let asked: GenerateRequest | null = null;
    const client = contextFromTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    const handle = traceGenerate(tracing, (r) => ((asked = r), fake.handle), REQUEST, info(client));
    handle.events.subscribe();
    fake.events.next({ type: 'text', delta: 'a', tokenIds: [1], atMs: 0 });
    fake.events.next({ type: 'audio', pcm: new Float32Array(4), sampleRateHz: 24000, seq: 0, atMs: 0 });
    fake.events.next({ type: 'done', finishReason: 'length', usage, atMs: 0 });
    const [root] = spans();
    expect(root.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(parentOf(root)).toBe('b7ad6b7169203331');
    expect(asked!.traceparent).toBe(`00-${root.spanContext().traceId}-${root.spanContext().spanId}-01`);
    // The handle names its trace: the exemplar of the answer's latency observations
    // (src/server/metrics/latencyMetrics.ts).
    expect(handle.traceId).toBe(root.spanContext().traceId);
    expect(root.attributes).toMatchObject({
      'chorus.protocol': 'http',
      'chorus.modalities': ['text', 'audio'],
      'chorus.request_id': 'r1',
      'chorus.status': 'length',
      'gen_ai.usage.input_tokens': 7,
      'gen_ai.usage.output_tokens': 3,
      'chorus.cached_tokens': 2,
      'chorus.audio_seconds': 0.32,
    });
    expect(root.attributes['chorus.ttft_ms']).toBeGreaterThanOrEqual(0);
    expect(root.attributes['chorus.ttfp_ms']).toBeGreaterThanOrEqual(root.attributes['chorus.ttft_ms'] as number);
    expect(root.events.map((e) => e.name)).toEqual(['first_text', 'first_audio']);
  });

  it("parents a Realtime response to the context it names, else to its session's; the stages get the root", () => {
    const session = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const own = '00-11111111111111111111111111111111-2222222222222222-01';
    for (const [given, parentSpan] of [
      [own, '2222222222222222'],
      ['00-bad', 'b7ad6b7169203331'], // malformed: the session's
      [undefined, 'b7ad6b7169203331'],
    ] as const) {
      const { tracing, spans } = memoryTracing();
      let asked: GenerateRequest | null = null;
      const fake = fakeHandle();
      const engine = { generate: (r: GenerateRequest) => ((asked = r), fake.handle) } as unknown as Engine;
      const traced = tracedEngine(engine, tracing, { parent: contextFromTraceparent(session) });
      traced.generate({ ...REQUEST, ...(given ? { traceparent: given } : {}) }).cancel();
      const [root] = spans();
      expect(parentOf(root)).toBe(parentSpan);
      expect(asked!.traceparent).toBe(`00-${root.spanContext().traceId}-${root.spanContext().spanId}-01`);
    }
    // Unsampled: the stages get no context at all, not the one the client named.
    const { tracing } = memoryTracing(false);
    let asked: GenerateRequest | null = null;
    const fake = fakeHandle();
    const engine = { generate: (r: GenerateRequest) => ((asked = r), fake.handle) } as unknown as Engine;
    tracedEngine(engine, tracing, { parent: ROOT_CONTEXT }).generate({ ...REQUEST, traceparent: own });
    expect(asked!.traceparent).toBeUndefined();
  });

  it('ends the root of an answer cancelled before anyone listened, and of a refused one', () => {
    const { tracing, spans } = memoryTracing();
    const fake = fakeHandle();
    traceGenerate(tracing, () => fake.handle, REQUEST, info()).cancel('refused');
    expect(fake.cancelled).toEqual(['refused']);
    expect(spans().map((s) => s.attributes['chorus.status'])).toEqual(['cancelled']);
    expect(() =>
      traceGenerate(
        tracing,
        () => {
          throw new Error('no room');
        },
        REQUEST,
        info(),
      ),
    ).toThrow('no room');
    expect(spans()[1].status).toMatchObject({ code: 2, message: 'no room' });
  });

  it('passes the request through untouched without tracing', () => {
    const fake = fakeHandle();
    let asked: GenerateRequest | null = null;
    const handle = traceGenerate(null, (r) => ((asked = r), fake.handle), REQUEST, info());
    expect(handle).toBe(fake.handle);
    expect(handle.traceId).toBeUndefined();
    expect(asked).toBe(REQUEST);
  });
});
