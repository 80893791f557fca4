/**
 * The result tables, defined once as columns and rendered either as aligned text (the terminal) or as Markdown
 * (results.md, bench/README.md). Column names follow vLLM-Omni's published table.
 */
import type { RunRow } from '../results.ts';

/** A table column over rows of type R (the TTFP bench's run rows unless said; the voice bench has its own). */
export interface Column<R = RunRow> {
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

const pair = (a: string, b: string) => `${a} / ${b}`;

/** The config a row ran (--compare-config); its file name, or `async`/`sync`. */
export const variantColumn: Column = { header: 'Config', cell: (r) => r.variant };

/** Means, one row per run: the headline table. */
export const meanColumns: readonly Column[] = [
  { header: 'Input', cell: (r) => String(r.input_len) },
  { header: 'Output', cell: (r) => String(r.output_len) },
  { header: 'async_chunk', cell: (r) => String(r.async_chunk) },
  { header: 'Code2Wav batch', cell: (r) => (r.code2wav_batch === null ? '-' : String(r.code2wav_batch)) },
  { header: 'Max concurrency', cell: (r) => String(r.concurrency) },
  { header: 'Prompts', cell: (r) => (r.failed > 0 ? `${r.completed} (+${r.failed} failed)` : String(r.completed)) },
  { header: 'Mean E2E (ms)', cell: (r) => ms(r.mean_e2e_ms) },
  { header: 'Mean TTFT (ms)', cell: (r) => ms(r.mean_ttft_ms) },
  { header: 'Mean TPOT (ms)', cell: (r) => ms(r.mean_tpot_ms) },
  { header: 'Mean TTFP (ms)', cell: (r) => ms(r.mean_ttfp_ms) },
  { header: 'Mean RTF', cell: (r) => num(r.mean_rtf) },
  { header: 'Mean ITL (ms)', cell: (r) => ms(r.mean_itl_ms) },
  { header: 'Underruns', cell: (r) => String(r.underruns) },
];

/** p50 / p99 of the same metrics, plus the stall figures and (in-process) the TTFP split. */
export const percentileColumns: readonly Column[] = [
  { header: 'async_chunk', cell: (r) => String(r.async_chunk) },
  { header: 'Max concurrency', cell: (r) => String(r.concurrency) },
  { header: 'E2E p50 / p99', cell: (r) => pair(ms(r.p50_e2e_ms), ms(r.p99_e2e_ms)) },
  { header: 'TTFT p50 / p99', cell: (r) => pair(ms(r.p50_ttft_ms), ms(r.p99_ttft_ms)) },
  { header: 'TPOT p50 / p99', cell: (r) => pair(ms(r.p50_tpot_ms), ms(r.p99_tpot_ms)) },
  { header: 'TTFP p50 / p99', cell: (r) => pair(ms(r.p50_ttfp_ms), ms(r.p99_ttfp_ms)) },
  { header: 'RTF p50 / p99', cell: (r) => pair(num(r.p50_rtf), num(r.p99_rtf)) },
  { header: 'ITL p50 / p99', cell: (r) => pair(ms(r.p50_itl_ms), ms(r.p99_itl_ms)) },
  { header: 'Worst stall (ms)', cell: (r) => ms(r.worst_stall_ms) },
  { header: 'TTFP engine / server (ms)', cell: (r) => pair(ms(r.mean_engine_ttfp_ms), ms(r.mean_server_ttfp_ms)) },
  { header: 'Req/s', cell: (r) => num(r.request_throughput, 2) },
  { header: 'Code2Wav decoded / audio frames', cell: (r) => num(r.code2wav_decode_ratio, 2) },
];

export function renderText<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const cells = rows.map((r) => columns.map((c) => c.cell(r)));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i].length)));
  const line = (values: readonly string[]) => values.map((v, i) => v.padStart(widths[i])).join('  ');
  return [line(columns.map((c) => c.header)), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join(
    '\n',
  );
}

export function renderMarkdown<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const line = (values: readonly string[]) => `| ${values.join(' | ')} |`;
  return [
    line(columns.map((c) => c.header)),
    line(columns.map(() => '---:')),
    ...rows.map((r) => line(columns.map((c) => c.cell(r)))),
  ].join('\n');
}
