/**
 * Co-running at a concurrency (issue 46 item 4): where a request's CPU went, by process, while the stages shared the
 * cores, against what each stage's models take alone at that batch (the throughput limit's passes), and the limit
 * that charges co-running: the cores over the CPU one request cost every serving process as served, and no more
 * requests a second than each stage process gets through on its own threads (cpuTime.ts cpuBoundRps: a stage
 * computes on its engine's intra-op threads, one in every shipped config, so its CPU a request is a floor on a
 * request's time there that the second core cannot lower; the throughput limit bounds each stage alone the same
 * way).
 *
 * The throughput limit charges each stage only its models' on-CPU time alone at batch c (bench/limit/). Served, each
 * stage process spends more per request: its models run in smaller batches than c (requests are at different points
 * of their answers) and slower beside the other stages' (two memory-bound models on 2 cores), and the process runs
 * its own receive, send and framing code; main and the clients take their share of the same cores. The co-running
 * limit charges all of that, so req/s under it says how busy the run kept the cores (or the busiest stage's
 * thread, when one stage spends more than the cores' share of a request), and the table says which process spent
 * what the limit does not charge.
 */
import type { ThroughputLimit } from '../limit/throughputLimit.ts';
import { BENCH_PROCESS, MAIN_PROCESS } from './cpuTime.ts';
import type { RunRow } from './results.ts';

/** The stages the throughput limit times, by the prefix of their instances' names. */
const LIMIT_STAGES = ['thinker', 'talker', 'code2wav'] as const;

export interface CoRunningStage {
  readonly stage: string;
  /** CPU ms per request of the stage's processes (every thread), served. */
  readonly servedMs: number;
  /** The stage's models alone at batch c, on-CPU ms per request (null: not a stage the limit times). */
  readonly aloneMs: number | null;
}

export interface CoRunning {
  readonly concurrency: number;
  /** Each serving process's CPU per request (stages by kind, then the rest by name), against its models alone. */
  readonly stages: readonly CoRunningStage[];
  /** Requests per second the cores allow at the CPU a request cost every serving process (RunRow.cpu_bound_rps). */
  readonly limitRps: number;
  /** The run's req/s over limitRps. */
  readonly share: number;
}

/** --config's async run at c against the throughput limit at batch c (null without the run's CPU figures). */
export function coRunningAt(runs: readonly RunRow[], limits: readonly ThroughputLimit[], c: number): CoRunning | null {
  const run = runs.find((r) => r.async_chunk && r.variant === runs[0]?.variant && r.concurrency === c);
  const per = run?.cpu_ms_per_request;
  if (!run || !per || run.cpu_bound_rps === null || run.cpu_bound_rps <= 0) return null;
  const limit = limits.find((l) => l.batch === c) ?? null;
  const sums = new Map<string, number>();
  for (const [name, ms] of Object.entries(per)) {
    const stage = name === BENCH_PROCESS || name === MAIN_PROCESS ? name : name.replace(/#.*$/, '');
    sums.set(stage, (sums.get(stage) ?? 0) + ms);
  }
  const aloneOf = (stage: string): number | null => {
    if (!limit || !(LIMIT_STAGES as readonly string[]).includes(stage)) return null;
    return limit[`${stage as (typeof LIMIT_STAGES)[number]}_ms`] / limit.batch;
  };
  const order = (s: string) => {
    const i = (LIMIT_STAGES as readonly string[]).indexOf(s);
    const n = LIMIT_STAGES.length;
    return i >= 0 ? i : s === MAIN_PROCESS ? n + 1 : s === BENCH_PROCESS ? n + 2 : n;
  };
  const stages = [...sums]
    .map(([stage, servedMs]) => ({ stage, servedMs, aloneMs: aloneOf(stage) }))
    .sort((a, b) => order(a.stage) - order(b.stage) || a.stage.localeCompare(b.stage));
  return { concurrency: c, stages, limitRps: run.cpu_bound_rps, share: run.request_throughput / run.cpu_bound_rps };
}

/** `thinker 61.7 ms (1.86x its 33.1 alone)`, one part per process, then the co-running limit and the run's share. */
export function coRunningLines(runs: readonly RunRow[], limits: readonly ThroughputLimit[]): string[] {
  const at = [...new Set(runs.filter((r) => r.concurrency > 1).map((r) => r.concurrency))];
  return at.flatMap((c) => {
    const x = coRunningAt(runs, limits, c);
    if (!x) return [];
    const parts = x.stages.map(({ stage, servedMs, aloneMs }) =>
      aloneMs === null || aloneMs <= 0
        ? `${stage} ${fixed(servedMs)}`
        : `${stage} ${fixed(servedMs)} (${(servedMs / aloneMs).toFixed(2)}x its ${fixed(aloneMs)} alone)`,
    );
    const total = x.stages.reduce((a, s) => a + s.servedMs, 0);
    return [
      `c=${c}: ${parts.join(', ')} = ${fixed(total)} ms a request; the limit with co-running charged ` +
        `${x.limitRps.toFixed(2)} req/s (the cores over that, no stage past its own threads); the run's req/s is ` +
        `${x.share.toFixed(2)} of it`,
    ];
  });
}

function fixed(ms: number): string {
  return ms >= 100 ? ms.toFixed(0) : ms.toFixed(1);
}
