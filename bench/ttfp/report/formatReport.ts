/**
 * The whole result, rendered once as Markdown (results.md, and the terminal prints the same text): the two run
 * tables, then async/sync (or config/compare-config) ratios in words, TTFP over the critical-path limit, the
 * development goals when asked for (--goals), and where the numbers came from.
 */
import { formatLimit } from '../../limit/limitResult.ts';
import { throughputCeilingAt, throughputShare, ttfpOverLimit } from '../goals.ts';
import type { LimitResult } from '../../limit/limitResult.ts';
import type { BenchResult, RunRow, VariantRatio } from '../results.ts';
import { ms, num, pct, provenanceOf, renderMarkdown, times, type Column } from '../../report/format.ts';
import { meanColumns, percentileColumns, variantColumn } from './tables.ts';
import { accountMarkdown } from '../account/formatAccount.ts';
import { coRunningLines } from '../coRunning.ts';

/** One concurrency's ratios, each named: "TTFP 0.04x (p50 0.05x), TTFT 0.50x, ...". */
function ratioLine(x: VariantRatio): string {
  return (
    `c=${x.concurrency}: mean TTFP ${times(x.ttfp)} (p50 ${times(x.p50_ttfp)}), mean TTFT ${times(x.ttft)}, ` +
    `mean end-to-end ${times(x.e2e)}, mean real-time factor ${times(x.rtf)}`
  );
}

function ratioLines(r: BenchResult): string[] {
  return r.ratios.map((x) =>
    ratioLine({
      concurrency: x.concurrency,
      ttfp: x.ttfp_async_over_sync,
      p50_ttfp: x.p50_ttfp_async_over_sync,
      ttft: x.ttft_async_over_sync,
      e2e: x.e2e_async_over_sync,
      rtf: x.rtf_async_over_sync,
    }),
  );
}

/** Title and lines of the --config / --compare-config ratios (none without --compare-config). */
function configRatioSection(r: BenchResult): [string, string[]] {
  const first = r.config_ratios[0];
  const title = first ? `${first.config} as a multiple of ${first.compare_config}` : '';
  return [title, r.config_ratios.map(ratioLine)];
}

/**
 * With two configs (or the playback and fifo runs of --compare-scheduling) the tables start with the variant each
 * row ran; with a TTFP target they end with the share of requests that met it.
 */
function columns(r: BenchResult, base: readonly Column<RunRow>[]): readonly Column<RunRow>[] {
  const byVariant = r.target.compare_file !== undefined || r.runs.some((x) => x.variant === 'playback');
  const target: Column<RunRow> = {
    header: 'TTFP target met',
    cell: (x) => pct(x.ttfp_target_met),
  };
  return [...(byVariant ? [variantColumn] : []), ...base, ...(r.options.ttfp_target_ms !== null ? [target] : [])];
}

/**
 * The c=1 limit's measures over the run, when it has more than one (runServeBench.ts RunLimit), and which packets the
 * limit is the median of: those beside the c=1 blocks when the result says which they are, else all of them.
 */
function limitMeasures(r: BenchResult): string[] {
  const m = r.limit_measures_ms;
  if (!m || m.length < 2 || !r.limit) return [];
  const ms = m.map((x) => x.toFixed(2));
  const inner = ms.slice(1, -1);
  const whole = r.limit_whole_run;
  const where = whole ? 'beside the c=1 blocks (right before and after each)' : 'between the c=1 blocks';
  const during = inner.length > 0 ? `, ${inner.join(', ')} ms ${where}` : '';
  const cpu = r.limit_measures_cpu_ms;
  const cpuLine =
    cpu?.length === m.length
      ? ` The process's CPU a packet in each: ${cpu.map((x) => x.toFixed(2)).join(', ')} ms.`
      : '';
  const of = whole
    ? `the limit is the median of the ${r.limit.repeats} packets beside the c=1 blocks, the machine of their ` +
      `seconds (the whole run's ${whole.repeats}: ${whole.median.total_ms.toFixed(2)} ms)`
    : `the limit is the median of all ${r.limit.repeats} packets`;
  return [
    '',
    `Measured ${ms[0]} ms before the runs${during} and ${ms.at(-1)} ms after them (the stage processes stopped): ` +
      `${of}.${cpuLine}`,
  ];
}

/** The limit a run is compared with: a lone request's at c=1, a burst of c at c > 1. */
function limitFor(r: BenchResult, concurrency: number): LimitResult | null {
  if (concurrency === 1) return r.limit;
  return r.burst_limits.find((l) => l.batch === concurrency) ?? null;
}

function limitLines(r: BenchResult): string[] {
  const lines: string[] = [];
  // The limit was measured on --config's graph: only its runs are compared with it.
  for (const run of r.runs.filter((x) => x.async_chunk && x.variant === r.runs[0].variant)) {
    const limit = limitFor(r, run.concurrency);
    const v = ttfpOverLimit(run, limit);
    if (!v || !limit) continue;
    const what = limit.batch === 1 ? 'limit' : `burst limit (${limit.batch} batched, IC ${limit.initial_chunk_frames})`;
    lines.push(
      `c=${run.concurrency}: mean TTFP ${ms(run.mean_ttfp_ms)} ms is ${times(v.mean)} the ${what} of ` +
        `${ms(limit.median.total_ms)} ms (p50 TTFP ${times(v.p50)})`,
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

function throughputLines(r: BenchResult): string[] {
  return r.throughput_limits.map((l) => {
    const share = throughputShare(r.runs, r.throughput_limits, l.batch);
    const ceiling = throughputCeilingAt(r.runs, r.throughput_limits, l.batch);
    const stages = `thinker ${ms(l.thinker_ms)} + talker ${ms(l.talker_ms)} + code2wav ${ms(l.code2wav_ms)} ms`;
    const best = l.best_batch === l.batch ? '' : `, the limit of batch ${l.best_batch}`;
    return (
      `c=${l.batch}: limit ${num(l.limit_rps, 2)} req/s${best} (batch ${l.batch}: ${num(l.batched_rps, 2)} req/s, ` +
      `${stages} on ${l.cores} cores, least on-CPU time of ${l.repeats} passes after ${l.warmup} warm-up)` +
      (share === null ? '' : `; the run's req/s is ${num(share, 2)} of this limit`) +
      (ceiling === null ? '' : `; with the bench's own CPU charged the cores allow at most ${num(ceiling, 2)} of it`)
    );
  });
}

/** Each run's CPU per request by process, and (a server the bench started) what the cores allow at that cost. */
function cpuLines(r: BenchResult): string[] {
  return r.runs.flatMap((run) => {
    const per = run.cpu_ms_per_request;
    if (!per) return [];
    const parts = Object.entries(per).map(([name, x]) => `${name} ${ms(x)}`);
    const total = Object.values(per).reduce((a, x) => a + x, 0);
    const bound =
      run.cpu_bound_rps === null
        ? ''
        : `; the cores allow ${num(run.cpu_bound_rps, 2)} req/s at that, the run measured ` +
          `${num(run.request_throughput, 2)} req/s (${num(run.request_throughput / run.cpu_bound_rps, 2)} of it)`;
    return [`${run.variant} c=${run.concurrency}: ${parts.join(' + ')} = ${ms(total)} ms${bound}`];
  });
}

const CO_RUNNING =
  'co-running (CPU ms a request by process as served, against the models alone at that batch; issue 46)';

function goalLines(r: BenchResult): string[] {
  return r.goals.map(
    (g) =>
      `${g.name}: ${Number.isInteger(g.value) ? g.value : g.value.toFixed(3)} (goal ${g.target}, ` +
      `${g.met ? 'met' : 'not met'})`,
  );
}

function errorLines(r: BenchResult): string[] {
  return r.runs.flatMap((run) => run.errors.map((e) => `${run.variant} c=${run.concurrency}: ${e}`));
}

function provenance(r: BenchResult): string {
  return (
    `${provenanceOf(r, true)}; protocol ${r.options.protocol}, warm-up ${r.options.warmup}, seed ${r.options.seed}` +
    (r.options.interleaved ? '; both servers up, each concurrency run in halves A B B A' : '')
  );
}

function remoteLines(r: BenchResult): string[] {
  return Object.entries(r.remote_stages).map(([variant, where]) => `${variant}: ${where}`);
}

/** What the report includes beyond the measurements. */
export interface ReportOptions {
  /** The development goals (bench/README.md) with met / not met: `chorus bench --goals`. */
  readonly goals?: boolean;
}

/** The slowest first packets of each run, with the trace id the client sent (issue 34). */
export function slowestLines(r: Pick<BenchResult, 'runs'>): string[] {
  return r.runs.flatMap((run) =>
    (run.slowest_ttfp ?? []).map(
      (s) =>
        `${run.variant} c=${run.concurrency}: ${s.request_id ?? '(no id)'} ${ms(s.ttfp_ms)} ms, ` +
        `trace ${s.trace_id ?? '-'}`,
    ),
  );
}

/**
 * The one report, Markdown: results.md holds it and the terminal prints it (its tables read as aligned text there).
 * The run tables, then the comparisons and limits as titled lists.
 */
export function formatReport(r: BenchResult, options: ReportOptions = {}): string {
  const out = [
    `# chorus bench results`,
    '',
    `\`${r.command}\``,
    '',
    provenance(r),
    '',
    renderMarkdown(columns(r, meanColumns), r.runs),
    '',
    renderMarkdown(columns(r, percentileColumns), r.runs),
  ];
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push('', `**${title}**`, '', ...lines.map((l) => `- ${l}`));
  };
  section('async_chunk on as a multiple of off (below 1x: on is faster)', ratioLines(r));
  section(...configRatioSection(r));
  section('Remote stages (started by the bench)', remoteLines(r));
  if (r.limit) out.push('', '**Critical-path limit**', '', '```', formatLimit(r.limit), '```', ...limitMeasures(r));
  section('Critical path of a burst of c requests batched together', burstLines(r));
  section('TTFP over the critical-path limit (async_chunk on; 1x is the limit)', limitLines(r));
  section(
    'Throughput limit (the whole compute of c requests at batch c, or a smaller measured batch if faster)',
    throughputLines(r),
  );
  section("CPU per request (ms; every thread; 'main' is the server's own process, 'bench' the clients)", cpuLines(r));
  section(CO_RUNNING, coRunningLines(r.runs, r.throughput_limits));
  const account = accountMarkdown(r);
  if (account.length > 0) out.push('', "**Where the c=1 packets' time went**", ...account);
  section('Slowest first packets (TTFP, trace id)', slowestLines(r));
  if (options.goals) section('Development goals (bench/README.md)', goalLines(r));
  section('Failed requests', errorLines(r));
  out.push(
    '',
    "TTFP engine / server: the engine's share (generate() to the first audio event in main) and the front end's " +
      '(request in to audio handed to the socket); the rest of the client TTFP is loopback and client parsing.',
  );
  return `${out.join('\n')}\n`;
}
