/**
 * `chorus bench --find-capacity --slo-ttfp-ms X [--slo-quantile 0.95]`, the mechanism: each step of the search
 * (capacitySearch.ts) is an open-loop run at that rate (measureRate), with the same arrivals a --request-rate run
 * of that rate gets; every step is also a row of the report, so plot.svg draws the curve the search walked.
 * With two servers (a --compare-* flag) the first one's capacity is searched and both then run at multiples of it,
 * interleaved rate by rate (scheduling at the edge of capacity: --compare-scheduling, issue 31 item 4).
 */
import type { LiveMode } from '../modeRun.ts';
import { openMode, warmUp } from '../modeRun.ts';
import { makePrompts } from '../prompts.ts';
import { benchTokenizer, interleaves, planModes } from '../runServeBench.ts';
import { judgeStep, searchCapacity, type CapacityOptions } from './capacitySearch.ts';
import {
  arrivalPlan,
  finish,
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

  if (modes.length === 1) {
    const live = await openMode(o, modes[0], result);
    try {
      await warmUp(o, live, warmupPrompts);
      await search(live);
    } finally {
      await live.close();
    }
  } else if (interleaves(modes)) {
    const lives: LiveMode[] = [];
    try {
      for (const mode of modes) lives.push(await openMode(o, mode, result));
      for (const live of lives) await warmUp(o, live, warmupPrompts);
      // The servers share the machine: the one not being searched is idle meanwhile, as in a closed-loop run.
      for (const rate of multiplesOf(await search(lives[0]))) for (const live of lives) await run(live, rate);
    } finally {
      await Promise.all(lives.map((live) => live.close()));
    }
  } else {
    let rates: number[] = [];
    for (const [i, mode] of modes.entries()) {
      const live = await openMode(o, mode, result);
      try {
        await warmUp(o, live, warmupPrompts);
        if (i === 0) rates = multiplesOf(await search(live));
        for (const rate of rates) await run(live, rate);
      } finally {
        await live.close();
      }
    }
  }
  sortRows(
    result,
    modes,
    [...ratesRun].sort((a, b) => a - b),
  );
  return finish(result);
}
