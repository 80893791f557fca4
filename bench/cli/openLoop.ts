/**
 * `chorus bench --request-rate R1,R2,...`: open-loop load (bench/ttfp/openLoop): its flags, checked before any
 * server starts, and the command that runs it and writes its report. Refusals (429) are what overload is
 * expected to produce, so only failures of another kind exit 1.
 */
import { writeResultFiles } from '../report/writeResultFiles.ts';
import { UsageError } from '../../src/basics.ts';
import type { OpenLoopBenchOptions } from '../ttfp/openLoop/runOpenLoopBench.ts';
import type { CapacityOptions } from '../ttfp/openLoop/capacitySearch.ts';
import { int, printReport, resultsDir, type ServeFlags } from './flags.ts';

export const openLoopUsage = `  chorus bench --request-rate R1,R2,... [--burstiness 1] [--duration 20 | --num-prompts N]
               [--slo-ttfp-ms MS] [--config FILE | --url URL [--sync-url URL] [--api-key KEY]]
               [--protocol realtime|chat] [--input-len 100] [--output-len 100]
               [--compare-sync | --compare-config FILE | --compare-scheduling | --compare-prefix-cache] [--out DIR]
               [--warmup 2] [--seed 0] [--timeout-ms 300000] [--json]
  chorus bench --find-capacity --slo-ttfp-ms MS [--slo-quantile 0.95] [--request-rate START] [--duration 20]
               [--capacity-multiples 0.7,0.8,0.9,1,1.1,1.2 (with a --compare-* flag)] [the flags above]
`;

/** The open-loop paragraphs of `chorus bench --help`. */
export const openLoopHelp = `\
--request-rate R1,R2,...: open-loop load instead of --concurrency: at each rate, requests sent at seeded arrival
times (gamma gaps of shape --burstiness, 1 = Poisson) within --duration seconds (default 20) or --num-prompts of them;
reports offered and admitted req/s, refusals (429) and how fast they came, TTFT/TTFP p50/p95/p99, underruns and
goodput (no underrun, TTFP within --slo-ttfp-ms if given) per rate (bench/README.md, "Open-loop load").
--find-capacity --slo-ttfp-ms MS: the highest Poisson rate whose TTFP --slo-quantile (0.95) is within MS with no
underrun, no failure and <= 1% refused, by doubling/halving from --request-rate (1) then bisecting to 10 %, each
step --duration long and judged on its second half too; with a --compare-* flag both servers then run at
--capacity-multiples of the first's capacity (0.7,0.8,0.9,1,1.1,1.2).
`;

/** Default arrival window per rate when neither --duration nor --num-prompts is given. */
const DEFAULT_DURATION_S = 20;

export type OpenLoopFlags = Pick<OpenLoopBenchOptions, 'ratesPerS' | 'burstiness' | 'length' | 'sloTtfpMs'> & {
  /** --find-capacity: search the rate (bench/ttfp/openLoop/capacityBench.ts) instead of running ratesPerS. */
  readonly findCapacity?: CapacityOptions;
};

/** The capacity search's bracket stops within 10 % of the capacity, or after this many steps. */
const CAPACITY_TOLERANCE = 0.1;
const CAPACITY_MAX_STEPS = 8;
const DEFAULT_MULTIPLES = [0.7, 0.8, 0.9, 1, 1.1, 1.2];

function positiveNumber(flag: string, value: string, what: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`--${flag} must be a number > 0${what}, got "${value}"`);
  return n;
}

/** The open-loop flags, or null for a closed-loop run (then none of them may be given). */
export function openLoopFlags(v: ServeFlags): OpenLoopFlags | null {
  const findCapacity = v['find-capacity'] === true;
  if (!findCapacity)
    for (const flag of ['slo-quantile', 'capacity-multiples'] as const)
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for the capacity search: add --find-capacity`);
  if (v['request-rate'] === undefined && !findCapacity) {
    for (const flag of ['burstiness', 'duration', 'slo-ttfp-ms'] as const)
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for open-loop load: add --request-rate R1,R2,...`);
    return null;
  }
  if (v.concurrency !== undefined)
    throw new UsageError(
      '--request-rate (open loop: requests arrive at that rate) and --concurrency (closed loop: c requests in ' +
        'flight) are two kinds of load: give one',
    );
  if (v.duration !== undefined && v['num-prompts'] !== undefined)
    throw new UsageError('give --duration S (arrivals within S seconds) or --num-prompts N (N arrivals), not both');
  const ratesPerS = (v['request-rate'] ?? '1')
    .split(',')
    .map((r) => positiveNumber('request-rate', r.trim(), ' (req/s)'));
  const burstiness = v.burstiness === undefined ? 1 : positiveNumber('burstiness', v.burstiness, ' (1: Poisson)');
  const length: OpenLoopFlags['length'] =
    v['num-prompts'] !== undefined
      ? { numPrompts: int('num-prompts', v['num-prompts'], 1) }
      : { durationS: v.duration === undefined ? DEFAULT_DURATION_S : positiveNumber('duration', v.duration, ' (s)') };
  const sloTtfpMs = v['slo-ttfp-ms'] === undefined ? null : int('slo-ttfp-ms', v['slo-ttfp-ms'], 1);
  if (!findCapacity) return { ratesPerS, burstiness, length, sloTtfpMs };
  if (sloTtfpMs === null)
    throw new UsageError('--find-capacity searches the rate within a TTFP SLO: add --slo-ttfp-ms MS');
  if (ratesPerS.length > 1)
    throw new UsageError('--find-capacity starts from one rate: give --request-rate START (default 1), not a list');
  const quantile = v['slo-quantile'] === undefined ? 0.95 : Number(v['slo-quantile']);
  if (!(quantile > 0 && quantile < 1))
    throw new UsageError(`--slo-quantile must be in (0, 1), e.g. 0.95 for p95, got "${v['slo-quantile']}"`);
  const comparing =
    v['compare-sync'] === true ||
    v['compare-scheduling'] === true ||
    v['compare-prefix-cache'] === true ||
    v['compare-config'] !== undefined;
  if (v['capacity-multiples'] !== undefined && !comparing)
    throw new UsageError(
      "--capacity-multiples runs a second server at multiples of the first one's capacity: add a --compare-* flag",
    );
  const multiples =
    v['capacity-multiples'] === undefined
      ? DEFAULT_MULTIPLES
      : v['capacity-multiples'].split(',').map((m) => positiveNumber('capacity-multiples', m.trim(), ''));
  return {
    ratesPerS,
    burstiness,
    length,
    sloTtfpMs,
    findCapacity: {
      quantile,
      startRate: ratesPerS[0],
      relTolerance: CAPACITY_TOLERANCE,
      maxSteps: CAPACITY_MAX_STEPS,
      multiples,
    },
  };
}

export async function runOpenLoopCommand(
  o: Omit<OpenLoopBenchOptions, 'onRate'> & {
    readonly out: string | undefined;
    readonly json: boolean;
    readonly findCapacity?: CapacityOptions;
  },
): Promise<number> {
  const { runOpenLoopBench } = await import('../ttfp/openLoop/runOpenLoopBench.ts');
  const { runCapacityBench } = await import('../ttfp/openLoop/capacityBench.ts');
  const { formatOpenLoop } = await import('../ttfp/openLoop/formatOpenLoop.ts');
  const result = o.findCapacity ? await runCapacityBench(o, o.findCapacity) : await runOpenLoopBench(o);
  const out = resultsDir(o.out, 'rate', result.started_at);
  const markdown = formatOpenLoop(result);
  const files = await writeResultFiles(out, result, markdown);
  printReport(o.json, result, () => markdown, files);
  // A capacity search drives rates past capacity on purpose: failures there are what it finds, not a broken run.
  const capacityOf = (variant: string) =>
    result.capacity?.find((c) => c.variant === variant)?.capacity_rps ?? (o.findCapacity ? 0 : Infinity);
  return result.rates.some((r) => r.failed > 0 && r.request_rate <= capacityOf(r.variant)) ? 1 : 0;
}
