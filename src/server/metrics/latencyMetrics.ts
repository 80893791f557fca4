/**
 * The latency histograms a client's experience is judged by (TTFT, TTFP, end to end), with OpenMetrics exemplars:
 * each bucket keeps the trace id (`trace_id`) of the latest traced response that fell in it, so a dashboard's slow
 * bucket links to the trace that shows where that response's time went (docs/metrics.md).
 *
 * Exemplars exist only in the OpenMetrics exposition (metricsExposition.ts): the Prometheus text format has no syntax
 * for them. prom-client refuses `enableExemplars` on a metric created in a text-format registry, so these are created
 * in none and registered after: the text exposition then leaves the exemplars out, and the OpenMetrics one prints them.
 */
import { Histogram, type Registry } from 'prom-client';

/** Label values are the metric's own (protocol); exemplar labels are their own set (trace_id), hence `string`. */
export type TracedHistogram = Histogram<string>;

function tracedHistogram(registry: Registry, name: string, help: string, buckets: number[]): TracedHistogram {
  const histogram = new Histogram({
    name,
    help,
    labelNames: ['protocol'],
    buckets,
    enableExemplars: true,
    registers: [],
  });
  registry.registerMetric(histogram);
  return histogram;
}

export function latencyMetricsIn(registry: Registry, buckets: number[]) {
  return {
    ttftSeconds: tracedHistogram(
      registry,
      'chorus_ttft_seconds',
      'Time from request arrival to the first text delta sent to the client.',
      buckets,
    ),
    ttfpSeconds: tracedHistogram(
      registry,
      'chorus_ttfp_seconds',
      'Time from request arrival to the first audio packet sent to the client.',
      buckets,
    ),
    e2eSeconds: tracedHistogram(
      registry,
      'chorus_e2e_seconds',
      'Time from request arrival to the end of a response that finished (stop or length) sent to the client.',
      buckets,
    ),
  };
}

/** One observation; with a trace id (a traced, sampled response) it becomes its bucket's exemplar. */
export function observeTraced(
  histogram: TracedHistogram,
  protocol: string,
  seconds: number,
  traceId: string | undefined,
): void {
  histogram.observe({
    labels: { protocol },
    value: seconds,
    ...(traceId ? { exemplarLabels: { trace_id: traceId } } : {}),
  });
}
