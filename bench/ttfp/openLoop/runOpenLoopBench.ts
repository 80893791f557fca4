/**
 * `chorus bench --request-rate R1,R2,...`: open-loop load at each rate, on the servers the closed loop would measure
 * (planModes: --config starts them in this process, --url reaches a running one, --compare-* gives two). With two
 * servers up at once each rate runs on A, then on B, before the next rate; otherwise one server after the other.
 * Every mode and rate is offered the same arrivals (one seed) and the same prompts.
 */
import { interleaves, loadOn, loadOptions, openMode, warmUp, type LiveMode, type Mode } from '../modeRun.ts';
import { ProgressBar } from '../ProgressBar.ts';
import { makePrompts } from '../prompts.ts';
import { finished, resultHeader, type ResultHeader } from '../results.ts';
import { benchTokenizer, planModes } from '../planModes.ts';
import type { ServeBenchOptions } from '../serveBenchOptions.ts';
import { planArrivals, type ArrivalPlan } from './arrivals.ts';
import { openLoopRow, type OpenLoopRecord, type OpenLoopRow } from './openLoopStats.ts';
import { runOpenLoop } from './runOpenLoop.ts';
import type { CapacityReport } from './capacitySearch.ts';

export interface OpenLoopBenchOptions extends Omit<ServeBenchOptions, 'concurrency' | 'numPrompts' | 'onRun'> {
  readonly ratesPerS: readonly number[];
  /** Gamma shape of the gaps (default 1: Poisson). */
  readonly burstiness: number;
  /** Per rate: arrivals within this many seconds, or exactly numPrompts of them. */
  readonly length: { readonly durationS: number } | { readonly numPrompts: number };
  /** Goodput counts requests whose TTFP is within this (null: any TTFP) and that never underran. */
  readonly sloTtfpMs: number | null;
  /** After each mode's rate, with its records (the CLI keeps them for requests.json). */
  readonly onRate?: (row: OpenLoopRow, records: readonly OpenLoopRecord[]) => void;
}

export interface OpenLoopResult extends ResultHeader {
  readonly tool: 'chorus bench --request-rate';
  readonly options: {
    readonly protocol: string;
    readonly request_rates: readonly number[];
    readonly burstiness: number;
    readonly duration_s: number | null;
    readonly num_prompts: number | null;
    readonly input_len: number;
    readonly output_len: number;
    readonly warmup: number;
    readonly seed: number;
    readonly slo_ttfp_ms: number | null;
    readonly initial_codec_chunk_frames: number | null;
    readonly ttfp_target_ms: number | null;
    readonly interleaved: boolean;
  };
  /** In the order of --request-rate, each rate's modes together (a capacity search: every step, by rate). */
  readonly rates: OpenLoopRow[];
  /** --find-capacity: each searched server's capacity and its steps. */
  readonly capacity?: CapacityReport[];
}

/** The same arrivals for every mode: a rate's plan depends on the rate, the burstiness and the seed alone. */
export function arrivalPlan(
  o: Pick<OpenLoopBenchOptions, 'burstiness' | 'length' | 'seed'>,
  rate: number,
): ArrivalPlan {
  const base = { ratePerS: rate, burstiness: o.burstiness, seed: o.seed + 0xa77 };
  return 'durationS' in o.length
    ? planArrivals({ ...base, durationMs: o.length.durationS * 1000 })
    : planArrivals({ ...base, count: o.length.numPrompts });
}

/** The run's header and options, before anything is measured. */
export function openLoopResult(o: OpenLoopBenchOptions, modes: readonly Mode[]): OpenLoopResult {
  return {
    tool: 'chorus bench --request-rate',
    ...resultHeader(o, modes),
    options: {
      protocol: o.protocol,
      request_rates: o.ratesPerS,
      burstiness: o.burstiness,
      duration_s: 'durationS' in o.length ? o.length.durationS : null,
      num_prompts: 'numPrompts' in o.length ? o.length.numPrompts : null,
      input_len: o.inputLen,
      slo_ttfp_ms: o.sloTtfpMs,
      ...loadOptions(o, modes),
    },
    rates: [],
  };
}

/** One server at one rate: the arrivals of `plan`, request i sending prompts[i]. */
export async function measureRate(
  o: OpenLoopBenchOptions,
  live: LiveMode,
  rate: number,
  plan: ArrivalPlan,
  prompts: readonly string[],
): Promise<{ row: OpenLoopRow; records: OpenLoopRecord[] }> {
  const bar = o.progress ? new ProgressBar(o.progress, `${live.mode.variant} ${rate} req/s`, plan.atMs.length) : null;
  const records = await runOpenLoop({
    ...loadOn(o, live, bar),
    arrivalsMs: plan.atMs,
    prompts,
    seed: o.seed,
    // About the requests in flight at a TTFP-scale latency: ~2 s of arrivals, a few sessions at most.
    prewarm: Math.min(plan.atMs.length, Math.max(1, Math.ceil(rate * 2)), 16),
  }).finally(() => bar?.finish());
  const row = openLoopRow(records, {
    variant: live.mode.variant,
    asyncChunk: live.mode.asyncChunk,
    ratePerS: rate,
    burstiness: o.burstiness,
    windowMs: plan.windowMs,
    sloTtfpMs: o.sloTtfpMs,
  });
  o.onRate?.(row, records);
  return { row, records };
}

/** Each mode's rows in the order of the rates run, the modes of a rate together. */
export function sortRows(
  result: OpenLoopResult,
  modes: readonly { variant: string }[],
  rates: readonly number[],
): void {
  const modeIndex = (r: OpenLoopRow) => modes.findIndex((m) => m.variant === r.variant);
  result.rates.sort(
    (x, y) => rates.indexOf(x.request_rate) - rates.indexOf(y.request_rate) || modeIndex(x) - modeIndex(y),
  );
}

export async function runOpenLoopBench(o: OpenLoopBenchOptions): Promise<OpenLoopResult> {
  const modes = await planModes(o);
  const interleave = interleaves(modes);
  const plans = o.ratesPerS.map((rate) => arrivalPlan(o, rate));
  const tokenizer = await benchTokenizer(o, modes);
  // Request i of every rate sends prompt i: as many prompts as the longest plan has arrivals.
  const count = Math.max(1, ...plans.map((p) => p.atMs.length));
  const prompts = makePrompts({ tokenizer, count, inputLen: o.inputLen, seed: o.seed });
  const warmupPrompts = makePrompts({ tokenizer, count: o.warmup, inputLen: o.inputLen, seed: o.seed + 0x5eed });
  const result = openLoopResult(o, modes);
  const measure = async (live: LiveMode, rateIndex: number): Promise<void> => {
    const { row } = await measureRate(o, live, o.ratesPerS[rateIndex], plans[rateIndex], prompts);
    result.rates.push(row);
  };
  if (interleave) {
    const lives: LiveMode[] = [];
    try {
      for (const mode of modes) lives.push(await openMode(o, mode, result));
      for (const live of lives) await warmUp(o, live, warmupPrompts);
      for (let i = 0; i < o.ratesPerS.length; i++) for (const live of lives) await measure(live, i);
    } finally {
      await Promise.all(lives.map((live) => live.close()));
    }
  } else {
    for (const mode of modes) {
      const live = await openMode(o, mode, result);
      try {
        await warmUp(o, live, warmupPrompts);
        for (let i = 0; i < o.ratesPerS.length; i++) await measure(live, i);
      } finally {
        await live.close();
      }
    }
  }
  sortRows(result, modes, o.ratesPerS);
  return finished(result);
}
