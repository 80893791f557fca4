/**
 * The whole result as the terminal shows it and as results.md stores it: the two run tables, async/sync
 * ratios, TTFP over the critical-path limit, the goals, and where the numbers came from.
 */
import { formatLimit } from '../../limit/runLimit.ts';
import { ttfpOverLimit } from '../goals.ts';
import type { BenchResult } from '../results.ts';
import { meanColumns, ms, num, percentileColumns, renderMarkdown, renderText } from './tables.ts';

function ratioLines(r: BenchResult): string[] {
  return r.ratios.map(
    (x) =>
      `c=${x.concurrency}: TTFP ${num(x.ttfp_async_over_sync)} (p50 ${num(x.p50_ttfp_async_over_sync)}), TTFT ${num(x.ttft_async_over_sync)}, ` +
      `E2E ${num(x.e2e_async_over_sync)}, RTF ${num(x.rtf_async_over_sync)}`,
  );
}

function limitLines(r: BenchResult): string[] {
  if (!r.limit) return [];
  const lines: string[] = [];
  for (const run of r.runs.filter((x) => x.async_chunk)) {
    const v = ttfpOverLimit(run, r.limit);
    if (v) lines.push(`c=${run.concurrency}: mean ${num(v.mean, 2)}, p50 ${num(v.p50, 2)}  (TTFP ${ms(run.mean_ttfp_ms)} ms over limit ${ms(r.limit.median.total_ms)} ms)`);
  }
  return lines;
}

function goalLines(r: BenchResult): string[] {
  return r.goals.map((g) => `${g.name}: ${Number.isInteger(g.value) ? g.value : g.value.toFixed(3)} (goal ${g.target}) ${g.met ? 'met' : 'MISSED'}`);
}

function errorLines(r: BenchResult): string[] {
  return r.runs.flatMap((run) => run.errors.map((e) => `${run.async_chunk ? 'async' : 'sync'} c=${run.concurrency}: ${e}`));
}

function provenance(r: BenchResult): string {
  const m = r.machine;
  return (
    `${r.started_at}, git ${r.git_sha.slice(0, 12)}, node ${m.node}, ${m.cpus} x ${m.cpu_model}, ${m.memory_gib} GiB, ` +
    `load ${m.load_avg_start.toFixed(2)} -> ${m.load_avg_end.toFixed(2)}; protocol ${r.options.protocol}, warm-up ${r.options.warmup}, seed ${r.options.seed}`
  );
}

export function formatText(r: BenchResult): string {
  const out = [renderText(meanColumns, r.runs), '', renderText(percentileColumns, r.runs)];
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', title, ...lines.map((l) => `  ${l}`));
  };
  section('async / sync ratios (lower is better for TTFP):', ratioLines(r));
  if (r.limit) out.push('', formatLimit(r.limit));
  section('TTFP / limit (async):', limitLines(r));
  section('goals:', goalLines(r));
  section('failed requests:', errorLines(r));
  out.push('', provenance(r));
  return out.join('\n');
}

export function formatMarkdown(r: BenchResult): string {
  const out = [
    `# chorus bench results`,
    '',
    `\`${r.command}\``,
    '',
    provenance(r),
    '',
    renderMarkdown(meanColumns, r.runs),
    '',
    renderMarkdown(percentileColumns, r.runs),
  ];
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', `**${title}**`, '', ...lines.map((l) => `- ${l}`));
  };
  section('async / sync ratios', ratioLines(r));
  if (r.limit) out.push('', '**Critical-path limit**', '', '```', formatLimit(r.limit), '```');
  section('TTFP / limit (async)', limitLines(r));
  section('Goals', goalLines(r));
  section('Failed requests', errorLines(r));
  out.push('', 'TTFP engine / server: the engine\'s share (generate() to the first audio event in main) and the front end\'s (request in to audio handed to the socket); the rest of the client TTFP is loopback and client parsing.');
  return `${out.join('\n')}\n`;
}
