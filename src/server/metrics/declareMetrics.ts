/**
 * prom-client metrics declared from a table: one row a metric, keyed by the name the code uses, saying its kind (the
 * row's `counter`, `gauge` or `histogram` key holds the exposed name), help, labels and a histogram's buckets. Every
 * metrics module declares its metrics this way, in the registry it is given (metrics.ts owns the server's), so a new
 * metric is a row and its label names stay typed (`labels: ['stage']` makes a `Counter<'stage'>`).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

interface RowBase {
  readonly help: string;
  readonly labels?: readonly string[];
}

export type MetricRow =
  | (RowBase & { readonly counter: string })
  | (RowBase & { readonly gauge: string })
  | (RowBase & { readonly histogram: string; readonly buckets: readonly number[] });

export type MetricTable = Readonly<Record<string, MetricRow>>;

type LabelsOf<R> = R extends { readonly labels: readonly (infer L extends string)[] } ? L : string;

/** The prom-client metric a row declares. */
export type MetricOf<R> = R extends { readonly counter: string }
  ? Counter<LabelsOf<R>>
  : R extends { readonly gauge: string }
    ? Gauge<LabelsOf<R>>
    : Histogram<LabelsOf<R>>;

export type DeclaredMetrics<T extends MetricTable> = { readonly [K in keyof T]: MetricOf<T[K]> };

/** Each row's metric, registered in `registry` (prom-client throws on a name registered twice). */
export function declareMetrics<const T extends MetricTable>(registry: Registry, table: T): DeclaredMetrics<T> {
  const declared: Record<string, Counter | Gauge | Histogram> = {};
  for (const [key, row] of Object.entries(table)) declared[key] = declareMetric(registry, row);
  return declared as DeclaredMetrics<T>;
}

function declareMetric(registry: Registry, row: MetricRow): Counter | Gauge | Histogram {
  const common = { help: row.help, labelNames: row.labels ?? [], registers: [registry] };
  if ('counter' in row) return new Counter({ name: row.counter, ...common });
  if ('gauge' in row) return new Gauge({ name: row.gauge, ...common });
  return new Histogram({ name: row.histogram, ...common, buckets: [...row.buckets] });
}
