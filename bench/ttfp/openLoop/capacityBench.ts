/**
 * `chorus bench --find-capacity --slo-ttfp-ms X [--slo-quantile 0.95]`, the mechanism: each step of the search
 * (capacitySearch.ts) is an open-loop run at that rate (measureRate), with the same arrivals a --request-rate run
 * of that rate gets; every step is also a row of the report (results.json has the curve the search walked).
 * With two servers (a --compare-* flag) the first one's capacity is searched and both then run at multiples of it,
 * interleaved rate by rate (scheduling at the edge of capacity: --compare-scheduling, issue 31 item 4).
 */
import { interleaves, openWarmed, type LiveMode, type Mode } from '../modeRun.ts';
import { makePrompts } from '../prompts.ts';
import { benchTokenizer, planModes } from '../planModes.ts';
import { judgeStep, searchCapacity, type CapacityOptions } from './capacitySearch.ts';
import { finished } from '../results.ts';
import {
  arrivalPlan,
  measureRate,
  openLoopResult,
  sortRows,
  type OpenLoopBenchOptions,
  type OpenLoopResult,
} from './runOpenLoopBench.ts';

/** How far from the start rate the bracket may go either way (x 2^6). */
const RANGE = 64;

export async function runCapacityBench(o: OpenLoopBenchOptions, c: CapacityOptions): Promise<OpenLoopResult> {
  const slo = o.sloTtfpMs;
  if (slo === null) throw new Error('--find-capacity needs --slo-ttfp-ms'); // the CLI refuses it first
  const modes = await planModes(o);
  const tokenizer = await benchTokenizer(o, modes);
  const promptsFor = (count: number) =>
    makePrompts({ tokenizer, count: Math.max(1, count), inputLen: o.inputLen, seed: o.seed });
  const warmupPrompts = makePrompts({ tokenizer, count: o.warmup, inputLen: o.inputLen, seed: o.seed + 0x5eed });
  const result: OpenLoopResult = { ...openLoopResult(o, modes), capacity: [] };
  const ratesRun: number[] = [];
  const run = async (live: LiveMode, rate: number) => {
    const plan = arrivalPlan(o, rate);
    const measured = await measureRate(o, live, rate, plan, promptsFor(plan.atMs.length));
    result.rates.push(measured.row);
    if (!ratesRun.includes(rate)) ratesRun.push(rate);
    return { ...measured, windowMs: plan.windowMs };
  };
  const search = async (live: LiveMode): Promise<number | null> => {
    let windowMs: number | null = null;
    const found = await searchCapacity(
      async (rate) => {
        const step = await run(live, rate);
        windowMs = step.windowMs;
        return judgeStep(rate, step.records, { sloTtfpMs: slo, quantile: c.quantile, windowMs: step.windowMs });
      },
      {
        startRate: c.startRate,
        minRate: c.startRate / RANGE,
        maxRate: c.startRate * RANGE,
        relTolerance: c.relTolerance,
        maxSteps: c.maxSteps,
      },
    );
    result.capacity!.push({
      variant: live.mode.variant,
      slo_ttfp_ms: slo,
      quantile: c.quantile,
      capacity_rps: found.capacity,
      failed_at_rps: found.failedAt,
      step_window_s: windowMs === null ? null : windowMs / 1000,
      steps: found.steps,
    });
    return found.capacity;
  };
  const multiplesOf = (capacity: number | null) =>
    capacity === null ? [] : c.multiples.map((m) => Number((m * capacity).toPrecision(3)));

  const open = (mode: Mode) => openWarmed(o, mode, result, warmupPrompts);
  await searchThenCompare(modes, open, search, run, multiplesOf);
  sortRows(
    result,
    modes,
    [...ratesRun].sort((a, b) => a - b),
  );
  return finished(result);
}

/**
 * The first server's capacity searched, then (two servers) both at multiples of it: up at once, rate by rate (the
 * one not being searched is idle meanwhile, as in a closed-loop run), or one after the other.
 */
async function searchThenCompare(
  modes: readonly Mode[],
  open: (mode: Mode) => Promise<LiveMode>,
  search: (live: LiveMode) => Promise<number | null>,
  run: (live: LiveMode, rate: number) => Promise<unknown>,
  multiplesOf: (capacity: number | null) => number[],
): Promise<void> {
  const lives: LiveMode[] = [];
  try {
    if (modes.length > 1 && interleaves(modes)) {
      for (const mode of modes) lives.push(await open(mode));
      for (const rate of multiplesOf(await search(lives[0]))) for (const live of lives) await run(live, rate);
      return;
    }
    let rates: number[] = [];
    for (const [i, mode] of modes.entries()) {
      const live = await open(mode);
      lives.push(live);
      // One server: its capacity alone; two: both at multiples of the first one's.
      if (i === 0) {
        const capacity = await search(live);
        if (modes.length > 1) rates = multiplesOf(capacity);
      }
      for (const rate of rates) await run(live, rate);
      await lives.pop()!.close();
    }
  } finally {
    await Promise.all(lives.map((live) => live.close()));
  }
}
