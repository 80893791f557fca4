/**
 * The TTFP bench's result tables, defined once as columns (rendered by bench/report/format.ts). Column names follow
 * vLLM-Omni's published table.
 */
import { ms, num, pair, type Column as GenericColumn } from '../../report/format.ts';
import type { RunRow } from '../results.ts';

/** A column over the TTFP bench's run rows. */
type Column = GenericColumn<RunRow>;

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

/** p50 / p99 of the same metrics, plus the stall figures and (a server the bench started) the TTFP split. */
export const percentileColumns: readonly Column[] = [
  { header: 'async_chunk', cell: (r) => String(r.async_chunk) },
  { header: 'Max concurrency', cell: (r) => String(r.concurrency) },
  { header: 'E2E p50 / p99', cell: (r) => pair(ms(r.p50_e2e_ms), ms(r.p99_e2e_ms)) },
  { header: 'TTFT p50 / p99', cell: (r) => pair(ms(r.p50_ttft_ms), ms(r.p99_ttft_ms)) },
  { header: 'TPOT p50 / p99', cell: (r) => pair(ms(r.p50_tpot_ms), ms(r.p99_tpot_ms)) },
  { header: 'TTFP p50 / p99', cell: (r) => pair(ms(r.p50_ttfp_ms), ms(r.p99_ttfp_ms)) },
  { header: 'RTF p50 / p99', cell: (r) => pair(num(r.p50_rtf), num(r.p99_rtf)) },
  { header: 'ITL p50 / p99', cell: (r) => pair(ms(r.p50_itl_ms), ms(r.p99_itl_ms)) },
  { header: 'Requests with an underrun', cell: (r) => String(r.requests_with_underruns) },
  { header: 'Worst stall (ms)', cell: (r) => ms(r.worst_stall_ms) },
  { header: 'TTFP engine / server (ms)', cell: (r) => pair(ms(r.mean_engine_ttfp_ms), ms(r.mean_server_ttfp_ms)) },
  { header: 'Duration (s)', cell: (r) => num(r.duration_s, 2) },
  { header: 'Audio (s)', cell: (r) => num(r.audio_seconds, 1) },
  { header: 'Req/s', cell: (r) => num(r.request_throughput, 2) },
  { header: 'Code2Wav decoded / audio frames', cell: (r) => num(r.code2wav_decode_ratio, 2) },
];
