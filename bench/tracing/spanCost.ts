/**
 * What tracing costs a stage in CPU per request, without the noise of a whole pipeline on a shared machine: the
 * span hooks of a Talker-like request (a prefill, 200 decode steps, 60 input chunks, 8 output chunks: 17 spans with
 * STEP_SPAN_EVERY 16) driven REQUESTS times through the real SDK, batched and exported over OTLP/HTTP to a
 * local sink, export included. `chorus bench --compare-tracing` measures the same end to end.
 *
 *   node --import tsx bench/tracing/spanCost.ts [requests]
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StageSpans } from '../../src/tracing/StageSpans.ts';
import { traceparentOf } from '../../src/tracing/traceContext.ts';
import { startTracing } from '../../src/tracing/tracing.ts';

const REQUESTS = Number(process.argv[2] ?? 500);
const DECODE_STEPS = 200;
const CHUNKS_IN = 60;
const CHUNKS_OUT = 8;

const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
sink.listen(0, '127.0.0.1');
await once(sink, 'listening');
const endpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50' };
const tracing = startTracing('talker#0', env)!;
const spans = new StageSpans(tracing, 'talker', 'talker#0');

const before = process.cpuUsage();
for (let r = 0; r < REQUESTS; r++) {
  const requestId = `req-${r}`;
  const root = tracing.tracer.startSpan('root');
  spans.add(requestId, traceparentOf(root));
  const sentAtMs = Date.now();
  for (let c = 0; c < CHUNKS_IN; c++) spans.arrival(requestId, 'thinker', sentAtMs, sentAtMs + 1, 4096);
  spans.step('prefill', performance.now(), [[requestId, 100]]);
  for (let s = 0; s < DECODE_STEPS; s++) spans.step('decode', performance.now(), [[requestId, 1]]);
  for (let c = 0; c < CHUNKS_OUT; c++) spans.chunkOut(requestId, 'code2wav');
  spans.end(requestId, 'stop');
  root.end();
  while (spans.idle(false)); // the spans are made when the stage idles
}
await tracing.flush();
const used = process.cpuUsage(before);
const perRequestMs = (used.user + used.system) / 1000 / REQUESTS;
process.stdout.write(`CPU per traced request (span hooks + batched OTLP export): ${perRequestMs.toFixed(3)} ms\n`);
await tracing.shutdown();
sink.close();
