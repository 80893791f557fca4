/**
 * The open-loop report: in the terminal a labelled block per rate and server (runSummary.ts's style, <= 100
 * columns); in results.md one table, a row per rate and server, with the run's provenance above it.
 */
import { BLOCK_WIDTH, line, rule } from '../report/runSummary.ts';
import { ms, num, pct, renderMarkdown, type Column } from '../../report/format.ts';
import type { OpenLoopResult } from './runOpenLoopBench.ts';
import type { CapacityReport } from './capacitySearch.ts';
import type { OpenLoopRow, Percentiles } from './openLoopStats.ts';

const p3 = (p: Percentiles): string => `${ms(p.p50)} / ${ms(p.p95)} / ${ms(p.p99)}`;

function variantName(variant: string): string {
  return variant === 'async' ? 'async_chunk on' : variant === 'sync' ? 'async_chunk off' : variant;
}

function arrivalsName(burstiness: number): string {
  return burstiness === 1 ? 'Poisson' : `gamma, burstiness ${burstiness}`;
}

/** One figure a line, as runSummary.ts prints the closed loop's. */
function percentileLines(name: string, p: Percentiles): string[] {
  return [
    line(`Median ${name} (ms)`, ms(p.p50)),
    line(`P95 ${name} (ms)`, ms(p.p95)),
    line(`P99 ${name} (ms)`, ms(p.p99)),
  ];
}

export function openLoopSummaryLines(r: OpenLoopRow): string[] {
  const slo = r.slo_ttfp_ms === null ? 'no underrun' : `TTFP <= ${r.slo_ttfp_ms} ms, no underrun`;
  return [
    rule(`${variantName(r.variant)}, ${r.request_rate} req/s (${arrivalsName(r.burstiness)})`, '='),
    line('Requests sent', String(r.num_requests)),
    line('Arrival window (s)', num(r.window_s, 1)),
    line('Run duration, with the drain (s)', num(r.duration_s, 1)),
    line('Offered (req/s)', num(r.offered_rps, 2)),
    line('Admitted (req/s)', num(r.admitted_rps, 2)),
    line('Completed requests', String(r.completed)),
    line('Failed requests (not refused)', String(r.failed)),
    line('Send lag p99 (ms)', ms(r.send_lag_p99_ms)),
    rule('Refused (429)', '-'),
    line('Refused share', `${pct(r.refused_share, 1)} (${r.refused})`),
    line('Median refusal answered in (ms)', ms(r.refusal_ms.p50)),
    line('P99 refusal answered in (ms)', ms(r.refusal_ms.p99)),
    rule('Admitted requests', '-'),
    ...percentileLines('TTFT', r.ttft_ms),
    ...percentileLines('TTFP', r.ttfp_ms),
    rule('Audio playback (a player fed as it arrives)', '-'),
    line('Requests with an underrun', `${pct(r.underrun_share, 1)} (${r.requests_with_underruns})`),
    line('Total stall (ms)', ms(r.total_stall_ms)),
    rule('Goodput', '-'),
    line(`Goodput (req/s: ${slo})`, num(r.goodput_rps, 2)),
    '='.repeat(BLOCK_WIDTH),
  ];
}

export function formatOpenLoopText(r: OpenLoopResult): string {
  const blocks = r.rates.map((row) => openLoopSummaryLines(row).join('\n'));
  for (const c of r.capacity ?? []) blocks.push(capacityLines(c).join('\n'));
  return `${blocks.join('\n\n')}\n`;
}

/** A capacity search: the figure, its bracket, and each step with how stable it was. */
export function capacityLines(c: CapacityReport): string[] {
  const q = `p${Math.round(c.quantile * 1000) / 10}`;
  const steps = c.steps.flatMap((s) => [
    `  ${s.rate} req/s: ${s.passed ? 'pass' : 'FAIL'}, TTFP ${q} ${ms(s.ttfpQuantileMs)} ms (halves ` +
      `${ms(s.firstHalfMs)} -> ${ms(s.secondHalfMs)}, drift ${num(s.drift, 2)}), ${s.completed} done, ` +
      `${s.tailSamples} beyond the ${q}`,
    ...(s.passed ? [] : [`    ${s.why}`]),
  ]);
  return [
    rule(`${variantName(c.variant)}: capacity at TTFP ${q} <= ${c.slo_ttfp_ms} ms, no underrun`, '='),
    line('Capacity (req/s)', c.capacity_rps === null ? 'none found' : String(c.capacity_rps)),
    line('Lowest failing rate (req/s)', c.failed_at_rps === null ? 'none found' : String(c.failed_at_rps)),
    line('Window per step (s)', num(c.step_window_s, 1)),
    "Steps, in order (drift: the second half of a step's quantile over the first; ~1 is steady):",
    ...steps,
    '='.repeat(BLOCK_WIDTH),
  ];
}

const columns: readonly Column<OpenLoopRow>[] = [
  { header: 'Server', cell: (r) => r.variant },
  { header: 'Rate (req/s)', cell: (r) => String(r.request_rate) },
  { header: 'Offered / admitted (req/s)', cell: (r) => `${num(r.offered_rps, 2)} / ${num(r.admitted_rps, 2)}` },
  { header: 'Sent', cell: (r) => String(r.num_requests) },
  { header: 'Refused', cell: (r) => `${pct(r.refused_share, 1)} (${r.refused})` },
  { header: 'Refusal p50 / p99 (ms)', cell: (r) => `${ms(r.refusal_ms.p50)} / ${ms(r.refusal_ms.p99)}` },
  { header: 'Failed', cell: (r) => String(r.failed) },
  { header: 'TTFT p50 / p95 / p99 (ms)', cell: (r) => p3(r.ttft_ms) },
  { header: 'TTFP p50 / p95 / p99 (ms)', cell: (r) => p3(r.ttfp_ms) },
  { header: 'Underrun share', cell: (r) => pct(r.underrun_share, 1) },
  { header: 'Total stall (ms)', cell: (r) => ms(r.total_stall_ms) },
  { header: 'Goodput (req/s)', cell: (r) => num(r.goodput_rps, 2) },
];

export function formatOpenLoopMarkdown(r: OpenLoopResult): string {
  const o = r.options;
  const length = o.duration_s !== null ? `${o.duration_s} s per rate` : `${o.num_prompts} requests per rate`;
  const slo = o.slo_ttfp_ms === null ? 'no TTFP SLO (goodput: no underrun)' : `TTFP SLO ${o.slo_ttfp_ms} ms`;
  return [
    '# chorus bench, open loop',
    '',
    `\`${r.command}\``,
    '',
    `${r.started_at}, git \`${r.git_sha.slice(0, 7)}\`, ${r.machine.cpus} CPUs (${r.machine.cpu_model}), load ` +
      `${num(r.machine.load_avg_start, 1)} -> ${num(r.machine.load_avg_end, 1)}`,
    '',
    `${o.protocol}, ${arrivalsName(o.burstiness)} arrivals, ${length}, input ${o.input_len}, output ` +
      `${o.output_len}, seed ${o.seed}, ${slo}. Rates are over the arrival window; latencies are of admitted ` +
      'requests that completed.',
    '',
    renderMarkdown(columns, r.rates),
    '',
    ...(r.capacity ?? []).flatMap((c) => ['```', ...capacityLines(c), '```', '']),
  ].join('\n');
}
