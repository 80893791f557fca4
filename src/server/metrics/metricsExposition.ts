/**
 * GET /metrics in the format the scraper asks for (its Accept header, negotiated by `negotiator`):
 *
 *   - the Prometheus text format (0.0.4) by default: what `promtool check metrics` reads, and what a Prometheus
 *     without exemplar storage asks for. It has no syntax for exemplars, so it carries none.
 *   - OpenMetrics 1.0 when the scraper prefers `application/openmetrics-text`, as Prometheus does with
 *     `--enable-feature=exemplar-storage`: the same metrics, the latency histograms' buckets with their trace-id
 *     exemplars (latencyMetrics.ts).
 *
 * Both come from the process's registry (metrics.ts) and the server's own ones (stageMetrics.ts). The OpenMetrics one
 * goes through a registry of views made per scrape: prom-client renames every counter of an OpenMetrics registry in
 * place (`x_total` -> `x`, to add the suffix back per sample), and on the shared metric objects that rename would leak
 * into every later text scrape.
 */
import Negotiator from 'negotiator';
import { Registry, type Metric, type OpenMetricsContentType } from 'prom-client';
import { metricsRegistry } from './metrics.ts';

/**
 * With their versions: a scraper names the version it reads (Prometheus: `application/openmetrics-text;
 * version=1.0.0,...;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5`), and a range with parameters matches only
 * a type that has the same ones.
 */
const TEXT = Registry.PROMETHEUS_CONTENT_TYPE;
const OPENMETRICS = Registry.OPENMETRICS_CONTENT_TYPE;

export interface Exposition {
  readonly contentType: string;
  readonly body: string;
}

/**
 * The metrics as `accept` prefers them (absent or matching neither: the text format): the process's and those of
 * `own` (the server's registries, whose names are not the process's).
 */
export async function metricsExposition(
  accept: string | undefined,
  own: readonly Registry[] = [],
): Promise<Exposition> {
  const preferred = new Negotiator({ headers: { accept } }).mediaType([TEXT, OPENMETRICS]);
  const registries = [metricsRegistry, ...own];
  if (preferred !== OPENMETRICS) {
    const all = Registry.merge(registries);
    return { contentType: all.contentType, body: spellNaN(await all.metrics()) };
  }
  // prom-client's typings declare no constructor argument: the content type is set after.
  const view = new Registry<OpenMetricsContentType>();
  view.setContentType(OPENMETRICS);
  // A view: reads (values, collect()) go to the metric itself; the rename lands on the view.
  for (const metric of registries.flatMap((r) => r.getMetricsAsArray()))
    view.registerMetric(Object.create(metric) as Metric);
  return { contentType: view.contentType, body: spellNaN(await view.metrics()) };
}

/**
 * prom-client writes a NaN sample value as "Nan"; both formats spell it "NaN" (strict parsers reject the other). It
 * happens whenever two scrapes come within the event-loop monitor's resolution: the lag gauges' histogram has no
 * sample yet and its mean is NaN.
 */
function spellNaN(text: string): string {
  return text.replace(/ Nan$/gm, ' NaN');
}
