/** The throughput limit's figures, from the passes bench/limit/runThroughput.ts times (pure: the reports read it). */
import { percentile } from '../ttfp/metrics.ts';

/** Each stage's whole work for the batch in one pass, ms (on-CPU time of the models' thread, or wall time). */
export interface ThroughputPass {
  readonly thinker_ms: number;
  readonly talker_ms: number;
  readonly code2wav_ms: number;
}

export interface ThroughputLimit extends ThroughputPass {
  readonly batch: number;
  readonly output_len: number;
  /** Measured passes; the stage times above are the least of each over them. */
  readonly repeats: number;
  /** Unmeasured passes run first on the same runners. */
  readonly warmup: number;
  /** Each stage's median on-CPU time over the measured passes, ms. */
  readonly median: ThroughputPass;
  /** Each stage's median wall time over the measured passes, ms (above the on-CPU time by what other work took). */
  readonly wall_median: ThroughputPass;
  /** The bound of each measured pass on its own, ms (how far the passes spread). */
  readonly pass_bounds_ms: readonly number[];
  /** Cores the stages can share. */
  readonly cores: number;
  /** max(slowest stage, sum / cores) over the stage times: the least time the batch takes in the pipeline, ms. */
  readonly bound_ms: number;
  /** batch / bound: requests per second the models allow when these requests run as one batch. */
  readonly batched_rps: number;
  /**
   * Requests per second the models allow at this concurrency: the best batched_rps over the measured batches up
   * to this one (with c requests in flight a scheduler can always run them in smaller batches, so the limit at c
   * is never below the limit at a smaller c; on a CPU a larger batch can cost more per request). Set by
   * `throughputEnvelope`; equal to batched_rps until then.
   */
  readonly limit_rps: number;
  /** The batch whose batched_rps limit_rps is. */
  readonly best_batch: number;
}

/** The limit of one batch from all its passes: the warm-up dropped, the least of each stage, bounded over the cores. */
export function summarizeThroughput(
  batch: number,
  outputLen: number,
  allPasses: readonly { readonly cpu: ThroughputPass; readonly wall: ThroughputPass }[],
  warmup: number,
  cores: number,
): ThroughputLimit {
  const passes = allPasses.slice(warmup).map((x) => x.cpu);
  const walls = allPasses.slice(warmup).map((x) => x.wall);
  if (passes.length === 0) throw new Error('the throughput limit needs at least one measured pass after the warm-up');
  const bound = (x: ThroughputPass) =>
    Math.max(x.thinker_ms, x.talker_ms, x.code2wav_ms, (x.thinker_ms + x.talker_ms + x.code2wav_ms) / cores);
  const keys = ['thinker_ms', 'talker_ms', 'code2wav_ms'] as const;
  const of = (f: (xs: number[]) => number, from = passes) =>
    Object.fromEntries(keys.map((k) => [k, f(from.map((x) => x[k]))])) as unknown as ThroughputPass;
  const median = (xs: number[]) => percentile(xs, 50);
  const least = of((xs) => Math.min(...xs));
  const boundMs = bound(least);
  const rps = batch / (boundMs / 1000);
  return {
    batch,
    output_len: outputLen,
    ...least,
    repeats: passes.length,
    warmup,
    median: of(median),
    wall_median: of(median, walls),
    pass_bounds_ms: passes.map(bound),
    cores,
    bound_ms: boundMs,
    batched_rps: rps,
    limit_rps: rps,
    best_batch: batch,
  };
}

/** Each limit raised to the best batched_rps of any measured batch up to its own (sorted by batch). */
export function throughputEnvelope(limits: readonly ThroughputLimit[]): ThroughputLimit[] {
  const sorted = [...limits].sort((a, b) => a.batch - b.batch);
  let best: ThroughputLimit | null = null;
  return sorted.map((l) => {
    if (!best || l.batched_rps >= best.batched_rps) best = l;
    return { ...l, limit_rps: best.batched_rps, best_batch: best.batch };
  });
}
