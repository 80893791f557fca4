/**
 * One request over two "hosts" is one trace (issue 34 goal): `chorus serve` with the Thinker (configs/two-host.yaml)
 * and a remote Talker and Code2Wav joined over Redis with `chorus stage`, each in its own IPC and mount namespace
 * (their traceparent came in the add over the Redis control channel, not IPC). Every process exports to the receiver
 * this test starts. A 100-token spoken answer's spans are counted against the bound (<= 200).
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readyInstances, startServe, startStage } from '../helpers/deployment.ts';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlpReceiver.ts';
import { redisForSuite } from '../helpers/redisServer.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');
const CLOCK_ERROR_NS = 3_000_000n; // two processes' clocks (~1 ms) and whole-ms chunk times
const MAX_SPANS_PER_100_TOKEN_ANSWER = 200;

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver?.close();
});

describe('tracing across hosts', () => {
  const suite = redisForSuite();

  it('joins the remote Talker and Code2Wav to the request trace, within the span bound', async () => {
    const env = { ...suite.env(), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' };
    const serve = await startServe(TWO_HOST, env);
    startStage(TWO_HOST, 'talker', 'b1', env, { isolated: true });
    startStage(TWO_HOST, 'code2wav', 'b1', env, { isolated: true });
    await readyInstances(serve, 3);

    const traceId = randomBytes(16).toString('hex');
    const clientSpanId = randomBytes(8).toString('hex');
    const res = await fetch(`${serve.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpanId}-01` },
      body: JSON.stringify({
        messages: [{ role: 'user', content: 'Tell me about the sea' }],
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'pcm16' },
        max_tokens: 100,
        ignore_eos: true,
      }),
    });
    expect(res.status).toBe(200);
    const stages = ['thinker', 'talker', 'code2wav'];
    const ofTrace = (spans: readonly ReceivedSpan[]) => spans.filter((s) => s.traceId === traceId);
    await receiver.until('the root and every stage span', (spans) => {
      const names = new Set(ofTrace(spans).map((s) => s.name));
      return names.has('chat.completion') && stages.every((s) => names.has(`stage ${s}`));
    });
    // Complete now: in each process every span of the request ends before its stage span, and is exported with it
    // or before. Main leaves cleanly with tracing on (its close flushes).
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    const trace = ofTrace(receiver.spans);
    const root = trace.find((s) => s.name === 'chat.completion')!;
    expect(root.parentSpanId).toBe(clientSpanId);
    expect(root.attributes['gen_ai.usage.output_tokens']).toBe(100);
    const instances = Object.fromEntries(stages.map((id) => [id, trace.find((s) => s.name === `stage ${id}`)!]));
    expect(Object.fromEntries(stages.map((id) => [id, instances[id].instance]))).toEqual({
      thinker: 'thinker#0',
      talker: 'talker#b1',
      code2wav: 'code2wav#b1',
    });
    for (const id of stages) expect(instances[id].parentSpanId).toBe(root.spanId);
    // The remote stages' first inputs crossed Redis: their hops are in the trace, under their stage spans, linked to
    // the producer's stage span (its context rode in the chunk's metadata, over Redis too).
    for (const [id, producer] of [
      ['talker', 'thinker'],
      ['code2wav', 'talker'],
    ]) {
      const hop = trace.find((s) => s.name === 'chunk hop' && s.parentSpanId === instances[id].spanId);
      expect(hop?.attributes['chorus.edge.transport']).toBe('redis');
      expect(hop?.links).toEqual([{ traceId, spanId: instances[producer].spanId }]);
    }

    const byId = new Map(trace.map((s) => [s.spanId, s]));
    for (const s of trace) {
      if (s === root) continue;
      const parent = byId.get(s.parentSpanId);
      expect(parent, `${s.name} (${s.instance}) has its parent in the trace`).toBeDefined();
      expect(s.startNs, `${s.name} (${s.instance}) starts after its parent`).toBeGreaterThanOrEqual(
        parent!.startNs - CLOCK_ERROR_NS,
      );
      // Within a process only: a remote stage's step may still be finishing when main has its last chunk.
      if (s.instance === parent!.instance)
        expect(s.endNs, `${s.name} (${s.instance}) ends before its parent`).toBeLessThanOrEqual(
          parent!.endNs + CLOCK_ERROR_NS,
        );
    }
    const perProcess = Object.fromEntries(
      [...new Set(trace.map((s) => s.instance))].map((i) => [i, trace.filter((s) => s.instance === i).length]),
    );
    console.log(`spans of one 100-token spoken answer: ${trace.length} ${JSON.stringify(perProcess)}`);
    expect(trace.length).toBeLessThanOrEqual(MAX_SPANS_PER_100_TOKEN_ANSWER);
  }, 180_000);
});
