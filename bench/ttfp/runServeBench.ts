/**
 * The TTFP bench: for each mode (async_chunk on, and off with --compare-sync; or --config and then
 * --compare-config) and each concurrency, send the same seeded prompts through the real front end and measure on
 * the client. With --config the bench starts each server in a process of its own (serverProcess.ts; and measures the
 * critical-path limit first, before any stage process runs), with the `chorus stage` processes of its remote stages,
 * if any; with --url it measures a running server.
 */
import type { LimitParts } from '../limit/limitResult.ts';
import { LimitSampler, runLimit } from '../limit/runLimit.ts';
import { runThroughputLimits } from '../limit/runThroughput.ts';
import { asyncSyncRatios, configRatios, evaluateGoals } from './goals.ts';
import type { BenchConfig } from './inProcessServer.ts';
import { loadOptions, ModeRun, openWarmed, overModes, sortRuns } from './modeRun.ts';
import { benchTokenizer, planModes } from './planModes.ts';
import type { ServeBenchOptions } from './serveBenchOptions.ts';
import { makePrompts } from './prompts.ts';
import { finished, resultHeader, type BenchResult, type RunRow } from './results.ts';
import { accountRow } from './account/accountRow.ts';
import type { PacketMark } from '../../src/basics.ts';
import type { RequestTrace } from './trace.ts';

export type { BenchTarget, ServeBenchOptions } from './serveBenchOptions.ts';

export async function runServeBench(o: ServeBenchOptions): Promise<BenchResult> {
  const modes = await planModes(o);
  const first = modes[0].config;
  const tokenizer = await benchTokenizer(o, modes);
  // Same prompts (and seeds) for every mode and concurrency; warm-up prompts come from another stream.
  const prompts = makePrompts({ tokenizer, count: o.numPrompts, inputLen: o.inputLen, seed: o.seed });
  const warmupPrompts = makePrompts({ tokenizer, count: o.warmup, inputLen: o.inputLen, seed: o.seed + 0x5eed });
  const result: BenchResult = {
    tool: 'chorus bench',
    ...resultHeader(o, modes),
    options: {
      protocol: o.protocol,
      concurrency: o.concurrency,
      num_prompts: o.numPrompts,
      input_len: o.inputLen,
      ...loadOptions(o, modes),
    },
    limit: null,
    burst_limits: [],
    throughput_limits: [],
    runs: [],
    ratios: [],
    config_ratios: [],
    goals: [],
  };
  const limit = first && o.limit !== false ? await measureLimits(o, first, result) : null;
  // The first-packet account of the c=1 runs: main's marks heard in its process, the stages' in their step traces.
  const accounted: { row: RunRow; traces: readonly RequestTrace[]; marks: readonly PacketMark[] }[] = [];
  const finish = (run: ModeRun) => {
    const done = run.finish(o, result);
    if (done.row.concurrency === 1) accounted.push(done);
  };
  const open = (mode: (typeof modes)[number]) => openWarmed(o, mode, result, warmupPrompts);
  try {
    await overModes(
      modes,
      o.concurrency,
      open,
      () => prompts.length,
      (live, concurrency) => {
        const run = new ModeRun(live, concurrency);
        // The c=1 limit is measured right before and right after each c=1 block (before the block's heap collection).
        const beside = concurrency === 1 && limit ? () => limit.beside() : undefined;
        const block = async (from: number, to: number) => {
          await run.block(o, prompts, from, to);
          beside?.();
        };
        return { before: beside, block, finish: () => finish(run) };
      },
    );
    const dir = first ? o.stepTraceDir : undefined;
    if (dir !== undefined)
      result.packet_accounts = await Promise.all(
        accounted.map(({ row, traces, marks }) =>
          accountRow(dir, { variant: row.variant, concurrency: row.concurrency, traces, marks }),
        ),
      );
    if (limit) await limit.after(); // every stage process has stopped: overModes closed the servers
  } finally {
    await limit?.close();
  }
  sortRuns(result.runs, modes, o.concurrency);
  // Two configs are compared as configs, even when one of them happens to run async_chunk: false.
  if (o.compareConfig || o.compareCompiled)
    result.config_ratios = configRatios(result.runs, modes[0].variant, modes[1].variant);
  else result.ratios = asyncSyncRatios(result.runs);
  result.goals = evaluateGoals(result.runs, result.ratios, result.limit, result.throughput_limits);
  return finished(result);
}

/**
 * The critical-path limit at c=1 and each burst's, then the throughput limit: before any stage process starts, so
 * the runners have the machine to themselves. The c=1 limit's runners stay open for its later measures.
 */
async function measureLimits(o: ServeBenchOptions, config: BenchConfig, result: BenchResult): Promise<RunLimit> {
  o.progress?.write('measuring the critical-path limit (the runners alone, before the server starts)\n');
  const sampler = await LimitSampler.open(limitOptions(o, config, 1));
  try {
    const run = new RunLimit(o, sampler, result);
    for (const c of [...new Set(o.concurrency)].filter((x) => x > 1).sort((a, b) => a - b))
      result.burst_limits.push(await runLimit(limitOptions(o, config, c)));
    o.progress?.write('measuring the throughput limit\n');
    result.throughput_limits = await runThroughputLimits({
      graph: config.graph,
      inputLen: o.inputLen,
      outputLen: o.outputLen,
      batches: o.concurrency,
      seed: o.seed,
      ...(o.throughputRepeats !== undefined ? { repeats: o.throughputRepeats } : {}),
    });
    return run;
  } catch (err) {
    await sampler.close();
    throw err;
  }
}

function limitOptions(o: ServeBenchOptions, config: BenchConfig, batch: number) {
  const ic = o.initialCodecChunkFrames;
  return {
    graph: config.graph,
    inputLen: o.inputLen,
    seed: o.seed,
    batch,
    ...(ic !== undefined ? { initialChunkFrames: ic } : {}),
  };
}

/**
 * The c=1 limit measured over the whole run: before any stage process starts, right before and right after each c=1
 * block (the stages alive and idle: an idle or a busy neighbour core moves the limit's packet by under 4%,
 * bench/NOTES.md) and after the last stage process has stopped. The limit the c=1 TTFP is compared with is the median
 * of the packets measured beside the c=1 blocks, the machine of the same seconds as those TTFPs; the whole run's
 * median is kept beside it. Measured only around the run, the limit compared TTFP with other minutes' machine (quiet,
 * 33.87 before and 46.18 after one run); as the median of every packet, whose before and after measures are two
 * thirds of them, it still did (one run's measures beside its c=1 blocks 30.2-34.5 ms, before and after it 23.1-23.6;
 * bench/NOTES.md, "The limit beside the c=1 blocks").
 */
class RunLimit {
  private readonly repeats: number;
  private readonly measures: LimitParts[] = [];
  private readonly besideBlocks: boolean[] = [];
  private readonly besidePackets: LimitParts[] = [];

  constructor(
    private readonly o: ServeBenchOptions,
    private readonly sampler: LimitSampler,
    private readonly result: BenchResult,
  ) {
    this.repeats = o.limitRepeats ?? 20;
    this.record(sampler.measure(this.repeats, 3), false);
  }

  /**
   * Right before or after a c=1 block: a quarter of the repeats, after one unmeasured packet (the runners sat through
   * the block or the server's start).
   */
  beside(): void {
    this.record(this.sampler.measure(Math.max(1, Math.ceil(this.repeats / 4)), 1), true);
  }

  async after(): Promise<void> {
    this.o.progress?.write('measuring the critical-path limit again (the stage processes stopped)\n');
    this.record(this.sampler.measure(this.repeats, 1), false);
  }

  close(): Promise<void> {
    return this.sampler.close();
  }

  private record(measure: { median: LimitParts; packets: readonly LimitParts[] }, besideBlock: boolean): void {
    this.measures.push(measure.median);
    this.besideBlocks.push(besideBlock);
    if (besideBlock) this.besidePackets.push(...measure.packets);
    const r = this.result;
    const beside = this.besidePackets.length > 0;
    r.limit = this.sampler.result(beside ? this.besidePackets : undefined);
    r.limit_whole_run = beside ? this.sampler.result() : undefined;
    r.limit_measures_ms = this.measures.map((m) => m.total_ms);
    r.limit_measures_cpu_ms = this.measures.map((m) => m.cpu_ms ?? Number.NaN);
    r.limit_measures_beside = [...this.besideBlocks];
  }
}
