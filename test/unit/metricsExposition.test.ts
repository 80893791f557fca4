/**
 * GET /metrics' two formats (src/server/metricsExposition.ts): the Prometheus text format unless the scraper prefers
 * OpenMetrics; only OpenMetrics carries the latency histograms' trace-id exemplars (LatencyMeter); an OpenMetrics
 * scrape does not change what the next text scrape says (prom-client renames counters of an OpenMetrics registry).
 * Prometheus itself reads the OpenMetrics body in test/e2e/tracing.test.ts; promtool the text one in
 * test/e2e/server.metrics.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LatencyMeter } from '../../src/server/metrics/LatencyMeter.ts';
import { metricsExposition } from '../../src/server/metrics/metricsExposition.ts';
import { serverMetrics } from '../../src/server/metrics/metrics.ts';

/** What Prometheus 2.42 sends when its exemplar storage is on. */
const PROMETHEUS_WITH_EXEMPLARS =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,' +
  'text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
/** ...and without it. */
const PROMETHEUS_PLAIN = 'text/plain;version=0.0.4;q=1,*/*;q=0.1';

const exemplarLines = (body: string, traceId: string) =>
  body.split('\n').filter((l) => l.includes(`# {trace_id="${traceId}"}`));

describe('metricsExposition', () => {
  it('serves exemplars of traced responses in OpenMetrics only, when the scraper prefers it', async () => {
    const traceId = randomBytes(16).toString('hex');
    const meter = new LatencyMeter('http', 'chatcmpl-x', performance.now() - 40, null, traceId);
    meter.text();
    meter.audio();
    meter.finished();
    new LatencyMeter('http', 'chatcmpl-untraced', performance.now() - 5000).text();

    const om = await metricsExposition(PROMETHEUS_WITH_EXEMPLARS);
    expect(om.contentType).toContain('application/openmetrics-text');
    expect(om.body.endsWith('# EOF\n')).toBe(true);
    const lines = exemplarLines(om.body, traceId);
    // One bucket of each histogram holds it: the first whose bound is at or above the observation.
    for (const name of ['chorus_ttft_seconds', 'chorus_ttfp_seconds', 'chorus_e2e_seconds'])
      expect(lines.filter((l) => l.startsWith(`${name}_bucket{`) && l.includes('protocol="http"'))).toHaveLength(1);
    // The untraced response's observation (5 s) left no exemplar of its own.
    const ttftExemplars = om.body
      .split('\n')
      .filter((l) => l.startsWith('chorus_ttft_seconds_bucket') && l.includes('# {'));
    expect(ttftExemplars).toHaveLength(1);
    const [ttft] = lines.filter((l) => l.startsWith('chorus_ttft_seconds_bucket'));
    const [, le, value] = /le="([^"]+)".* # \{[^}]*\} (\S+) \S+$/.exec(ttft)!;
    expect(Number(value)).toBeGreaterThanOrEqual(0.04);
    expect(Number(value)).toBeLessThanOrEqual(Number(le));

    for (const accept of [PROMETHEUS_PLAIN, undefined, '*/*', 'application/openmetrics-text;q=0, text/plain']) {
      const text = await metricsExposition(accept);
      expect(text.contentType, String(accept)).toContain('text/plain');
      expect(text.body).not.toContain('# {');
      expect(text.body).not.toContain('# EOF');
    }
  });

  it('keeps counter names as they are in the text format after an OpenMetrics scrape', async () => {
    serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'completed' });
    const before = (await metricsExposition(undefined)).body;
    expect(before).toContain('# TYPE chorus_responses_total counter');
    const om = (await metricsExposition(PROMETHEUS_WITH_EXEMPLARS)).body;
    // OpenMetrics names the family without _total and adds it to each sample.
    expect(om).toContain('# TYPE chorus_responses counter');
    expect(om).toMatch(/^chorus_responses_total\{/m);
    expect((await metricsExposition(undefined)).body).toContain('# TYPE chorus_responses_total counter');
    expect(serverMetrics.responsesTotal).toHaveProperty('name', 'chorus_responses_total');
  });
});
