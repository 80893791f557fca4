/**
 * What tracing costs a request when it is off (no OTEL_* endpoint), against the code before tracing existed: the work
 * the hooks still do per request, timed alone. In main a chat request's `traceparent` header is parsed (the SDK's W3C
 * propagator) and its three latency observations go to histograms that can hold exemplars; everything else is a test
 * of a null field (`spans?.`, `if (!tracing)`): per stage step, per chunk and per request, a few hundred a request.
 *
 *   node --import tsx bench/tracing/offPathCost.ts [iterations] [cpu ms per request, for the share]
 */
import { Histogram, Registry } from 'prom-client';
import { contextFromTraceparent } from '../../src/basics.ts';

const N = Number(process.argv[2] ?? 200_000);
const CPU_MS_PER_REQUEST = Number(process.argv[3] ?? 500);
const HEADER = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function histogram(exemplars: boolean): Histogram<string> {
  const h = new Histogram({
    name: 'x_seconds',
    help: 'x',
    labelNames: ['protocol'],
    buckets: [0.01, 0.1, 1, 10],
    enableExemplars: exemplars,
    registers: [],
  });
  new Registry().registerMetric(h);
  return h;
}

/** Microseconds per call of `fn`, after a warm-up of the same length (the best of three runs). */
function perCallUs(fn: (i: number) => void): number {
  for (let i = 0; i < N; i++) fn(i);
  let best = Infinity;
  for (let run = 0; run < 3; run++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) fn(i);
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1000 / N);
  }
  return best;
}

let sink = 0;
const parse = perCallUs(() => {
  sink += contextFromTraceparent(HEADER, undefined) ? 1 : 0;
});
const [withExemplars, plain] = [histogram(true), histogram(false)];
// As src/server/metrics/latencyMetrics.ts observes now (an exemplar-capable histogram, no trace id when off), and as
// the histograms were observed before exemplars.
const exemplarObserve = perCallUs((i) => {
  withExemplars.observe({ labels: { protocol: 'http' }, value: (i % 100) / 50 });
});
const plainObserve = perCallUs((i) => {
  plain.observe({ protocol: 'http' }, (i % 100) / 50);
});
const perRequestUs = parse + 3 * Math.max(0, exemplarObserve - plainObserve);
const rows = [
  ['traceparent header parsed (main, per chat request)', parse],
  ['latency observation, exemplar-capable histogram', exemplarObserve],
  ['latency observation, plain histogram (before)', plainObserve],
  ['added per request (one parse, three observations)', perRequestUs],
] as const;
for (const [what, us] of rows) process.stdout.write(`${what}: ${us.toFixed(3)} us\n`);
const share = (perRequestUs / 1000 / CPU_MS_PER_REQUEST) * 100;
process.stdout.write(
  `share of ${CPU_MS_PER_REQUEST} ms of CPU per request: ${share.toFixed(5)}%` +
    ` (${sink > 0 ? 'parsed' : 'not parsed'})\n`,
);
