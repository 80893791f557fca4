/**
 * Playback-aware scheduling: the pieces the Talker and Code2Wav schedulers share. Pure: times are passed in.
 *
 * A stream's listener plays audio as it arrives; what matters for each request is when its buffered audio runs
 * out (its deadline), not when it arrived. A stage models that from its own side: the first packet is due by the
 * request's TTFP target (or DEFAULT_FIRST_PACKET_SLACK_MS after admission when it has none), and once audio flows
 * the buffer runs dry at `first sent + audio sent` (the listener started playing when the first packet left).
 * Schedulers order work by deadline (least slack first) and keep each step short enough for the urgent requests
 * in it: work whose deadline is far waits a step rather than slow down a listener about to run dry.
 */

import type { SchedulingPolicy } from '../common/graph.ts';

export type { SchedulingPolicy };

/**
 * Without a TTFP target, a new request's first packet is scheduled as if its listener had this much audio
 * buffered at admission: it goes before streams with more audio left, after those about to run dry.
 */
export const DEFAULT_FIRST_PACKET_SLACK_MS = 250;

/** What the scheduler needs of one request's playback. */
export interface PlaybackDeadline {
  /** Epoch ms by which the request's next output must be out (its listener runs dry then). */
  readonly deadlineMs: number;
  /** Sequential steps the request needs before that output exists (decode steps to its next chunk; 1 for a decode). */
  readonly stepsNeeded: number;
}

/** Estimated duration (ms) of a step of `units` (tokens, or codec frames); null while nothing has been measured. */
export type StepCost = (units: number) => number | null;

/** When a plan is made and what a step costs (playback policy; fifo ignores both). */
export interface ScheduleClock {
  readonly nowMs: number;
  readonly cost: StepCost;
}

/**
 * Online fit of a step's duration to its size, ms ~ fixedMs + perUnitMs x units: least squares with exponential
 * forgetting, so it follows the load (the stage shares the CPU with the others) within a few dozen steps.
 */
export class StepCostModel {
  private w = 0;
  private sx = 0;
  private sy = 0;
  private sxx = 0;
  private sxy = 0;

  /** `decay` < 1: how much each older step still counts when a new one is observed. */
  constructor(private readonly decay = 0.95) {}

  observe(units: number, ms: number): void {
    if (!(units > 0) || !(ms >= 0)) return;
    const d = this.decay;
    this.w = this.w * d + 1;
    this.sx = this.sx * d + units;
    this.sy = this.sy * d + ms;
    this.sxx = this.sxx * d + units * units;
    this.sxy = this.sxy * d + units * ms;
  }

  /** The fitted duration of a step of `units`, never below the per-unit share alone; null before any step. */
  estimate(units: number): number | null {
    if (this.w === 0) return null;
    const mx = this.sx / this.w;
    const my = this.sy / this.w;
    const varX = this.sxx / this.w - mx * mx;
    // One step size seen so far (all decodes of the same batch): no slope to fit, the cost scales with the size.
    if (varX < 1e-6 * mx * mx) return (my / mx) * units;
    const slope = Math.max(0, (this.sxy / this.w - mx * my) / varX);
    const fixed = Math.max(0, my - slope * mx);
    return fixed + slope * units;
  }

  readonly cost: StepCost = (units) => this.estimate(units);
}

/** Exponentially weighted mean of a latency as it is observed (null before the first observation). */
export class Ewma {
  private mean: number | null = null;

  constructor(private readonly weight = 0.2) {}

  observe(x: number): void {
    if (!Number.isFinite(x)) return;
    this.mean = this.mean === null ? x : this.mean + this.weight * (x - this.mean);
  }

  get value(): number | null {
    return this.mean;
  }
}

/**
 * The longest step (ms) that still lets every request in it meet its deadline: each needs `stepsNeeded` steps
 * of about this length. A request that would miss even in steps of no length (its deadline has passed) does not
 * bound the step: it cannot be helped by starving the others, and it runs first anyway (least slack first).
 */
export function stepBoundMs(d: PlaybackDeadline, nowMs: number): number {
  const slack = d.deadlineMs - nowMs;
  return slack > 0 ? slack / Math.max(1, d.stepsNeeded) : Infinity;
}

/**
 * How many of `wanted` units an item may add to a step of `scheduledUnits` without its estimated duration going
 * over `boundMs`: all of them when nothing is measured yet or nothing bounds the step, 0 when even one unit
 * would not fit.
 */
export function unitsWithinBound(cost: StepCost, scheduledUnits: number, wanted: number, boundMs: number): number {
  if (boundMs === Infinity) return wanted;
  const full = cost(scheduledUnits + wanted);
  if (full === null || full <= boundMs) return wanted;
  // The cost is linear in units: find the largest count that fits by bisection (few iterations, no closed form
  // needed of the model's internals).
  let lo = 0;
  let hi = wanted;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if ((cost(scheduledUnits + mid) ?? 0) <= boundMs) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Orders by deadline (least slack first), then by arrival; requests without a deadline last. */
export function byDeadline<T extends { readonly arrival: number }>(deadline: (t: T) => number): (a: T, b: T) => number {
  return (a, b) => deadline(a) - deadline(b) || a.arrival - b.arrival;
}
