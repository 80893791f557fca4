/**
 * The open-loop report, rendered once as Markdown (results.md, and the terminal prints the same text): one table, a
 * row per rate and server, with the run's provenance above it, then each capacity search.
 */
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

/** A capacity search: the figure, its bracket, and each step with how stable it was. */
function capacityLines(c: CapacityReport): string[] {
  const q = `p${Math.round(c.quantile * 1000) / 10}`;
  const steps = c.steps.map(
    (s) =>
      `- ${s.rate} req/s: ${s.passed ? 'pass' : 'FAIL'}, TTFP ${q} ${ms(s.ttfpQuantileMs)} ms (halves ` +
      `${ms(s.firstHalfMs)} -> ${ms(s.secondHalfMs)}, drift ${num(s.drift, 2)}), ${s.completed} done, ` +
      `${s.tailSamples} beyond the ${q}${s.passed ? '' : `; ${s.why}`}`,
  );
  const rps = (v: number | null) => (v === null ? 'none found' : `${v} req/s`);
  return [
    `**${variantName(c.variant)}: capacity at TTFP ${q} <= ${c.slo_ttfp_ms} ms, no underrun**`,
    '',
    `Capacity ${rps(c.capacity_rps)}; lowest failing rate ${rps(c.failed_at_rps)}; ${num(c.step_window_s, 1)} s ` +
      "a step. The steps in order (drift: the second half of a step's quantile over the first; ~1 is steady):",
    '',
    ...steps,
  ];
}

const columns: readonly Column<OpenLoopRow>[] = [
  { header: 'Server', cell: (r) => r.variant },
  { header: 'Rate (req/s)', cell: (r) => String(r.request_rate) },
  { header: 'Offered / admitted (req/s)', cell: (r) => `${num(r.offered_rps, 2)} / ${num(r.admitted_rps, 2)}` },
  { header: 'Sent', cell: (r) => String(r.num_requests) },
  { header: 'Window / run (s)', cell: (r) => `${num(r.window_s, 1)} / ${num(r.duration_s, 1)}` },
  { header: 'Send lag p99 (ms)', cell: (r) => ms(r.send_lag_p99_ms) },
  { header: 'Refused', cell: (r) => `${pct(r.refused_share, 1)} (${r.refused})` },
  { header: 'Refusal p50 / p99 (ms)', cell: (r) => `${ms(r.refusal_ms.p50)} / ${ms(r.refusal_ms.p99)}` },
  { header: 'Completed / failed', cell: (r) => `${r.completed} / ${r.failed}` },
  { header: 'TTFT p50 / p95 / p99 (ms)', cell: (r) => p3(r.ttft_ms) },
  { header: 'TTFP p50 / p95 / p99 (ms)', cell: (r) => p3(r.ttfp_ms) },
  { header: 'Underrun share', cell: (r) => `${pct(r.underrun_share, 1)} (${r.requests_with_underruns})` },
  { header: 'Total stall (ms)', cell: (r) => ms(r.total_stall_ms) },
  { header: 'Goodput (req/s)', cell: (r) => num(r.goodput_rps, 2) },
];

export function formatOpenLoop(r: OpenLoopResult): string {
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
    ...(r.capacity ?? []).flatMap((c) => [...capacityLines(c), '']),
  ].join('\n');
}
