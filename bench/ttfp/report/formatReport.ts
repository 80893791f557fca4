/**
 * The whole result as the terminal shows it and as results.md stores it: the two run tables, async/sync
 * ratios, TTFP over the critical-path limit, the goals, and where the numbers came from.
 */
import { formatLimit } from '../../limit/runLimit.ts';
import { ttfpOverLimit } from '../goals.ts';
import type { LimitResult } from '../../limit/runLimit.ts';
import type { BenchResult } from '../results.ts';
import { meanColumns, ms, num, percentileColumns, renderMarkdown, renderText } from './tables.ts';

function ratioLines(r: BenchResult): string[] {
  return r.ratios.map(
    (x) =>
      `c=${x.concurrency}: TTFP ${num(x.ttfp_async_over_sync)} (p50 ${num(x.p50_ttfp_async_over_sync)}), TTFT ` +
      `${num(x.ttft_async_over_sync)}, ` +
      `E2E ${num(x.e2e_async_over_sync)}, RTF ${num(x.rtf_async_over_sync)}`,
  );
}

/** The limit a run is compared with: a lone request's at c=1, a burst of c at c > 1. */
function limitFor(r: BenchResult, concurrency: number): LimitResult | null {
  if (concurrency === 1) return r.limit;
  return r.burst_limits.find((l) => l.batch === concurrency) ?? null;
}

function limitLines(r: BenchResult): string[] {
  const lines: string[] = [];
  for (const run of r.runs.filter((x) => x.async_chunk)) {
    const limit = limitFor(r, run.concurrency);
    const v = ttfpOverLimit(run, limit);
    if (!v || !limit) continue;
    const what = limit.batch === 1 ? 'limit' : `burst limit (${limit.batch} batched, IC ${limit.initial_chunk_frames})`;
    lines.push(
      `c=${run.concurrency}: mean ${num(v.mean, 2)}, p50 ${num(v.p50, 2)}  (TTFP ${ms(run.mean_ttfp_ms)} ms over ` +
        `${what} ${ms(limit.median.total_ms)} ms)`,
    );
  }
  return lines;
}

function burstLines(r: BenchResult): string[] {
  return r.burst_limits.map((l) => {
    const m = l.median;
    return (
      `burst of ${l.batch}: ${ms(m.total_ms)} ms = thinker prefill ${ms(m.thinker_prefill_ms)} + decode ` +
      `${ms(m.thinker_decode_ms)} + ` +
      `talker prefill ${ms(m.talker_prefill_ms)} + frames ${ms(m.talker_decode_ms)} + code2wav ` +
      `${ms(m.code2wav_ms)} (IC ${l.initial_chunk_frames})`
    );
  });
}

function goalLines(r: BenchResult): string[] {
  return r.goals.map(
    (g) =>
      `${g.name}: ${Number.isInteger(g.value) ? g.value : g.value.toFixed(3)} (goal ${g.target}) ` +
      `${g.met ? 'met' : 'MISSED'}`,
  );
}

function errorLines(r: BenchResult): string[] {
  return r.runs.flatMap((run) =>
    run.errors.map((e) => `${run.async_chunk ? 'async' : 'sync'} c=${run.concurrency}: ${e}`),
  );
}

function provenance(r: BenchResult): string {
  const m = r.machine;
  return (
    `${r.started_at}, git ${r.git_sha.slice(0, 12)}, node ${m.node}, ${m.cpus} x ${m.cpu_model}, ${m.memory_gib} ` +
    `GiB, ` +
    `load ${m.load_avg_start.toFixed(2)} -> ${m.load_avg_end.toFixed(2)}; protocol ${r.options.protocol}, warm-up ` +
    `${r.options.warmup}, seed ${r.options.seed}`
  );
}

export function formatText(r: BenchResult): string {
  const out = [renderText(meanColumns, r.runs), '', renderText(percentileColumns, r.runs)];
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', title, ...lines.map((l) => `  ${l}`));
  };
  section('async / sync ratios (lower is better for TTFP):', ratioLines(r));
  if (r.limit) out.push('', formatLimit(r.limit));
  section('the same for a burst of c requests batched together (medians, ms):', burstLines(r));
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
  section('Critical path of a burst of c requests batched together', burstLines(r));
  section('TTFP / limit (async)', limitLines(r));
  section('Goals', goalLines(r));
  section('Failed requests', errorLines(r));
  out.push(
    '',
    "TTFP engine / server: the engine's share (generate() to the first audio event in main) and the front end's " +
      '(request in to audio handed to the socket); the rest of the client TTFP is loopback and client parsing.',
  );
  return `${out.join('\n')}\n`;
}
