/**
 * The bench's report formatting, in one place: table columns rendered as Markdown (stdout, results.md,
 * bench/README.md), and the cells every report writes (milliseconds, ratios, shares). A harness's own columns live
 * beside it (ttfp/report/tables.ts, the open loop's and the account's formatters); how a figure looks lives here.
 */
import type { Machine } from '../common.ts';

/** A table column over rows of type R. */
export interface Column<R> {
  readonly header: string;
  readonly cell: (r: R) => string;
}

export function ms(v: number | null): string {
  if (v === null) return '-';
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

export function num(v: number | null, digits = 3): string {
  return v === null ? '-' : v.toFixed(digits);
}

/** A ratio: `1.23x`. */
export function times(v: number | null): string {
  return v === null ? '-' : `${v.toFixed(2)}x`;
}

/** A share as a whole percentage: `64%` (`digits` more for finer shares). */
export function pct(v: number | null, digits = 0): string {
  return v === null ? '-' : `${(v * 100).toFixed(digits)}%`;
}

export const pair = (a: string, b: string): string => `${a} / ${b}`;

export function renderMarkdown<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const line = (values: readonly string[]) => `| ${values.join(' | ')} |`;
  return [
    line(columns.map((c) => c.header)),
    line(columns.map(() => '---:')),
    ...rows.map((r) => line(columns.map((c) => c.cell(r)))),
  ].join('\n');
}

/** When and where a result was measured: the report's provenance line starts with it (`memory`: with the GiB). */
export function provenanceOf(
  r: {
    readonly started_at: string;
    readonly git_sha: string;
    readonly machine: Pick<Machine, 'node' | 'cpus' | 'cpu_model' | 'memory_gib' | 'load_avg_start' | 'load_avg_end'>;
  },
  memory = false,
): string {
  const m = r.machine;
  return (
    `${r.started_at}, git ${r.git_sha.slice(0, 12)}, node ${m.node}, ${m.cpus} x ${m.cpu_model}, ` +
    `${memory ? `${m.memory_gib} GiB, ` : ''}load ${m.load_avg_start.toFixed(2)} -> ${m.load_avg_end.toFixed(2)}`
  );
}
