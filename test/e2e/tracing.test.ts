/**
 * OpenTelemetry traces over the real pipeline (configs/tiny-omni-text-in.yaml: Thinker, Talker and Code2Wav in their
 * own processes), exported by the real OTLP/HTTP exporter of every process to a receiver this test starts: one
 * spoken chat completion is one trace under the client's traceparent (root in main, a stage span per stage process,
 * queue / step / chunk-hop spans under those, timestamps consistent across processes); a malformed traceparent
 * starts a new trace and is no error; a Realtime upgrade's traceparent parents its responses; a real Prometheus
 * with exemplar storage on stores a traced answer's trace id as an exemplar of its TTFT; a collector that has gone
 * away costs the answers nothing. One server for every case (the last one closes the receiver).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../src/tracing/tracing.ts';
import { ownSegments } from '../helpers/engine.ts';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.ts';
import { PrometheusServer } from '../helpers/prometheus.ts';
import { RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

/** Clocks of two processes on one machine disagree by up to ~1 ms (StepTrace.ts); chunk times are whole ms. */
const CLOCK_ERROR_NS = 3_000_000n;
const OTEL_VARS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_SERVICE_NAME'] as const;

let receiver: OtlpReceiver;
let tracing: Tracing;
let served: ServedPipeline | undefined;
let base: string;
let wsUrl: string;
const savedEnv = new Map(OTEL_VARS.map((k) => [k, process.env[k]]));

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  // Set before anything starts: stage processes inherit the environment, main's tracing reads it.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  process.env.OTEL_BSP_SCHEDULE_DELAY = '50'; // ms: export soon after a span ends, not every 5 s
  process.env.OTEL_SERVICE_NAME = 'chorus-test';
  // Main's tracing as processTracing() builds it, but this file's own: the e2e files share a worker process
  // (isolate: false), whose processTracing() an earlier file may have settled (off) and a later one must not inherit.
  tracing = startTracing('main')!;
  served = await servePipeline(undefined, { tracing });
  ({ base, wsUrl } = served);
}, 240_000);

afterAll(async () => {
  await served?.close();
  await tracing?.shutdown();
  await receiver?.close();
  for (const [k, v] of savedEnv)
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  expect(ownSegments()).toEqual([]);
});

function newTraceparent(): { traceparent: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { traceparent: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

function chat(body: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Say hi.' }], ...body }),
  });
}

const ofTrace = (traceId: string) => (spans: readonly ReceivedSpan[]) => spans.filter((s) => s.traceId === traceId);

describe('tracing over the real pipeline', () => {
  it('makes one spoken chat completion one trace across main and every stage process', async () => {
    const client = newTraceparent();
    const res = await chat(
      { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' }, max_tokens: 6 },
      { traceparent: client.traceparent },
    );
    expect(res.status).toBe(200);
    const spansOf = ofTrace(client.traceId);
    const stageSpan = (stage: string) => (spans: readonly ReceivedSpan[]) =>
      spansOf(spans).find((s) => s.name === `stage ${stage}`);
    await receiver.until(
      'the root and a span of every stage',
      (spans) =>
        ['thinker', 'talker', 'code2wav'].every((s) => stageSpan(s)(spans)) &&
        spansOf(spans).some((s) => s.name === 'chat.completion'),
    );
    const trace = spansOf(receiver.spans);
    const root = trace.find((s) => s.name === 'chat.completion')!;
    expect(root.parentSpanId).toBe(client.spanId);
    expect(root.instance).toBe('main');
    expect(root.attributes).toMatchObject({
      'chorus.protocol': 'http',
      'chorus.modalities': ['text', 'audio'],
      'chorus.status': 'length',
      'gen_ai.usage.output_tokens': 6,
    });
    for (const figure of ['chorus.ttft_ms', 'chorus.ttfp_ms', 'gen_ai.usage.input_tokens'])
      expect(root.attributes[figure]).toBeGreaterThan(0);
    expect(root.events).toEqual(expect.arrayContaining(['first_text', 'first_audio']));

    // Each stage's span: a child of the root, made in that stage's own process.
    const stages = ['thinker', 'talker', 'code2wav'].map((s) => stageSpan(s)(receiver.spans)!);
    for (const s of stages) {
      expect(s.parentSpanId).toBe(root.spanId);
      expect(s.instance).toBe(`${String(s.attributes['chorus.stage'])}#0`);
      expect(s.pid).not.toBe(process.pid);
      // The Thinker hit max_tokens; the stages after it ended with their input (stop).
      expect(s.attributes['chorus.status']).toBe(s === stages[0] ? 'length' : 'stop');
      expect(s.events).toContain('first_chunk_out');
      const children = trace.filter((c) => c.parentSpanId === s.spanId);
      expect(children.filter((c) => c.name === 'queue')).toHaveLength(1);
      expect(children.some((c) => c.name.endsWith(' step'))).toBe(true);
    }
    expect(new Set(stages.map((s) => s.pid)).size).toBe(3);
    // The Thinker prefilled then decoded; the Talker and Code2Wav took their first input over a chunk hop.
    const thinker = trace.filter((c) => c.parentSpanId === stages[0].spanId).map((c) => c.name);
    expect(thinker).toEqual(expect.arrayContaining(['prefill step', 'decode step']));
    // Each first hop links to its producer's stage span, whose trace context rode in the chunk's metadata.
    for (const [s, from, producer] of [
      [stages[1], 'thinker', stages[0]],
      [stages[2], 'talker', stages[1]],
    ] as const) {
      const hop = trace.find((c) => c.parentSpanId === s.spanId && c.name === 'chunk hop')!;
      expect(hop.attributes).toMatchObject({ 'chorus.edge.from': from, 'chorus.edge.transport': 'shm' });
      expect(hop.links).toEqual([{ traceId: client.traceId, spanId: producer.spanId }]);
      expect(s.attributes['chorus.chunks_in']).toBeGreaterThanOrEqual(1);
    }

    // Every span of the trace hangs off the client's span, no child starts before its parent, and within a process no
    // child ends after its parent. Across processes a stage may end after main's root: main has the last audio as
    // soon as the chunk is put, while the stage's step that put it is still finishing.
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    for (const s of trace) {
      expect(s.endNs).toBeGreaterThanOrEqual(s.startNs);
      if (s === root) continue;
      const parent = byId.get(s.parentSpanId);
      expect(parent, `${s.name} has its parent in the trace`).toBeDefined();
      expect(s.startNs, `${s.name} starts after ${parent!.name}`).toBeGreaterThanOrEqual(
        parent!.startNs - CLOCK_ERROR_NS,
      );
      if (s.instance === parent!.instance)
        expect(s.endNs, `${s.name} ends before ${parent!.name}`).toBeLessThanOrEqual(parent!.endNs + CLOCK_ERROR_NS);
    }
  }, 60_000);

  it('starts a new trace for a malformed traceparent, and answers as usual', async () => {
    const before = new Set(receiver.spans.map((s) => s.spanId));
    const bad = `00-${'0'.repeat(32)}-${randomBytes(8).toString('hex')}-01`; // an all-zero trace id is invalid
    const res = await chat({ max_tokens: 2 }, { traceparent: bad });
    expect(res.status).toBe(200);
    const fresh = (spans: readonly ReceivedSpan[]) =>
      spans.filter((s) => !before.has(s.spanId) && s.name === 'chat.completion');
    await receiver.until('the completion root span', (spans) => fresh(spans).length === 1);
    const [root] = fresh(receiver.spans);
    expect(root.parentSpanId).toBe('');
    expect(root.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(root.traceId).not.toBe('0'.repeat(32));
    await receiver.until('the Thinker span of the new trace', (spans) =>
      spans.some((s) => s.traceId === root.traceId && s.name === 'stage thinker' && s.parentSpanId === root.spanId),
    );
  }, 30_000);

  it("parents a Realtime session's responses to its upgrade's traceparent", async () => {
    const client = newTraceparent();
    const rt = await RealtimeClient.connect(wsUrl, undefined, { headers: { traceparent: client.traceparent } });
    try {
      const done = await rt.respond('Hello.', { output_modalities: ['text'], max_output_tokens: 3 }, 30_000);
      expect((done.response as { status: string }).status).toBe('incomplete');
    } finally {
      rt.close();
    }
    const spansOf = ofTrace(client.traceId);
    await receiver.until('the response and its Thinker span', (spans) => {
      const root = spansOf(spans).find((s) => s.name === 'realtime.response');
      return Boolean(root && spansOf(spans).some((s) => s.name === 'stage thinker' && s.parentSpanId === root.spanId));
    });
    const root = spansOf(receiver.spans).find((s) => s.name === 'realtime.response')!;
    expect(root.parentSpanId).toBe(client.spanId);
    expect(root.attributes).toMatchObject({ 'chorus.protocol': 'realtime', 'chorus.modalities': ['text'] });
  }, 60_000);

  it("takes a browser's traceparent from the URL, and a response's own from its metadata", async () => {
    const session = newTraceparent();
    const own = newTraceparent();
    // A browser cannot set a WebSocket's headers: the session's context comes in the URL.
    const rt = await RealtimeClient.connect(`${wsUrl}?traceparent=${session.traceparent}`);
    const metadata = { traceparent: own.traceparent, note: 'second' };
    try {
      const text = { output_modalities: ['text'], max_output_tokens: 2 };
      const first = await rt.respond('Hello.', text, 30_000);
      expect((first.response as { metadata: unknown }).metadata).toBeNull();
      const second = await rt.respond('Again.', { ...text, metadata }, 30_000);
      expect((second.response as { metadata: unknown }).metadata).toEqual(metadata); // read back as given
      // A malformed one parents nothing: that response stays in the session's trace.
      await rt.respond('Once more.', { ...text, metadata: { traceparent: 'not-a-traceparent' } }, 30_000);
      // Beyond OpenAI's limits (16 pairs): refused by name, the session goes on.
      const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
      rt.send({ type: 'response.create', response: { ...text, metadata: tooMany } });
      const refused = await rt.next('error', () => true, 10_000);
      expect(JSON.stringify(refused)).toContain('metadata');
    } finally {
      rt.close();
    }
    const roots = (traceId: string) => (spans: readonly ReceivedSpan[]) =>
      ofTrace(traceId)(spans).filter((s) => s.name === 'realtime.response');
    await receiver.until(
      'the three responses in their traces',
      (spans) => roots(session.traceId)(spans).length === 2 && roots(own.traceId)(spans).length === 1,
    );
    for (const r of roots(session.traceId)(receiver.spans)) expect(r.parentSpanId).toBe(session.spanId);
    expect(roots(own.traceId)(receiver.spans)[0].parentSpanId).toBe(own.spanId);
  }, 60_000);

  it("gives Prometheus (exemplar storage on) a traced answer's trace id as a TTFT exemplar", async () => {
    const prometheus = await PrometheusServer.start(new URL(base).host);
    try {
      const client = newTraceparent();
      expect((await chat({ max_tokens: 2 }, { traceparent: client.traceparent })).status).toBe(200);
      await prometheus.until(`trace ${client.traceId} among the exemplars of chorus_ttft_seconds`, async () =>
        (await prometheus.exemplars('chorus_ttft_seconds_bucket')).some((e) => e.labels.trace_id === client.traceId),
      );
      // A scraper that does not ask for OpenMetrics still gets the text format (promtool's: server.metrics.test.ts).
      const text = await fetch(`${base}/metrics`);
      expect(text.headers.get('content-type')).toContain('text/plain');
      expect(await text.text()).not.toContain(client.traceId);
    } finally {
      await prometheus.stop();
    }
  }, 60_000);

  it('answers as usual when the collector has gone away', async () => {
    await receiver.close();
    const res = await chat(
      { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' }, max_tokens: 4 },
      { traceparent: newTraceparent().traceparent },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: { audio: { data: string } } }[] };
    expect(body.choices[0].message.audio.data.length).toBeGreaterThan(0);
    // The export fails (connection refused): the flush still resolves, and the server still serves.
    await tracing.flush();
    expect((await chat({ max_tokens: 2 })).status).toBe(200);
  }, 60_000);
});
