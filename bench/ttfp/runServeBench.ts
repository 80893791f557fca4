/**
 * The TTFP bench: for each mode (async_chunk on, and off with --compare-sync; or --config and then
 * --compare-config) and each concurrency, send the same seeded prompts through the real front end and measure on
 * the client. With --config the bench starts its own server in this process (and measures the critical-path limit
 * first, before any stage process runs), with the `chorus stage` processes of its remote stages, if any; with
 * --url it measures a running server.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import {
  ByteTokenizer,
  ChorusError,
  createTokenizer,
  ErrorCodes,
  type Logger,
  presets,
  type RoutingPolicy,
  type StageGraph,
  type Tokenizer,
} from '../../src/index.ts';
import { runLimit } from '../limit/runLimit.ts';
import { runThroughputLimits } from '../limit/runThroughput.ts';
import { asyncSyncRatios, configRatios, evaluateGoals } from './goals.ts';
import { readBenchConfig, type BenchConfig } from './inProcessServer.ts';
import { remoteStagesOf } from './RemoteStageHost.ts';
import { ModeRun, openMode, warmUp, type LiveMode, type Mode } from './modeRun.ts';
import type { BenchTarget, ServeBenchOptions } from './serveBenchOptions.ts';
import { makePrompts } from './prompts.ts';
import { resultHeader, type BenchResult, type RunRow } from './results.ts';
import { ServerTimings } from './ServerTimings.ts';
import { PacketMarks } from './account/PacketMarks.ts';
import type { RequestTrace } from './trace.ts';

export type { BenchTarget, ServeBenchOptions } from './serveBenchOptions.ts';

export async function runServeBench(o: ServeBenchOptions): Promise<BenchResult> {
  const modes = await planModes(o);
  const interleave = interleaves(modes);
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
      output_len: o.outputLen,
      warmup: o.warmup,
      seed: o.seed,
      initial_codec_chunk_frames: o.initialCodecChunkFrames ?? null,
      ttfp_target_ms: o.ttfpTargetMs ?? null,
      interleaved: interleave,
    },
    limit: null,
    burst_limits: [],
    throughput_limits: [],
    runs: [],
    ratios: [],
    config_ratios: [],
    goals: [],
  };
  if (first && o.limit !== false) {
    // Before any stage process starts, so the runners have the machine to themselves.
    o.progress?.write('measuring the critical-path limit (the runners alone, before the server starts)\n');
    const ic = o.initialCodecChunkFrames;
    const limitAt = (batch: number) =>
      runLimit({
        graph: first.graph,
        inputLen: o.inputLen,
        seed: o.seed,
        repeats: o.limitRepeats,
        batch,
        ...(ic !== undefined ? { initialChunkFrames: ic } : {}),
      });
    result.limit = await limitAt(1);
    for (const c of [...new Set(o.concurrency)].filter((x) => x > 1).sort((a, b) => a - b))
      result.burst_limits.push(await limitAt(c));
    o.progress?.write('measuring the throughput limit\n');
    result.throughput_limits = await runThroughputLimits({
      graph: first.graph,
      inputLen: o.inputLen,
      outputLen: o.outputLen,
      batches: o.concurrency,
      seed: o.seed,
      ...(o.throughputRepeats !== undefined ? { repeats: o.throughputRepeats } : {}),
    });
  }
  const timings = first ? new ServerTimings() : null;
  // The first-packet account of the c=1 runs: main's marks heard here, the stages' in their step traces.
  const marks = first && o.stepTraceDir !== undefined ? new PacketMarks(o.stepTraceDir) : null;
  const accounted: { row: RunRow; traces: readonly RequestTrace[] }[] = [];
  const finish = (run: ModeRun) => {
    const done = run.finish(o, result, timings);
    if (done.row.concurrency === 1) accounted.push(done);
  };
  try {
    if (interleave) {
      const lives: LiveMode[] = [];
      try {
        for (const mode of modes) lives.push(await openMode(o, mode, result));
        for (const live of lives) await warmUp(o, live, warmupPrompts);
        const half = Math.ceil(prompts.length / 2);
        for (const concurrency of o.concurrency) {
          const [a, b] = lives.map((live) => new ModeRun(live, concurrency));
          for (const [run, from, to] of [
            [a, 0, half],
            [b, 0, half],
            [b, half, prompts.length],
            [a, half, prompts.length],
          ] as const)
            await run.block(o, prompts, from, to);
          for (const run of [a, b]) finish(run);
        }
      } finally {
        await Promise.all(lives.map((live) => live.close()));
      }
    } else {
      for (const mode of modes) {
        const live = await openMode(o, mode, result);
        try {
          await warmUp(o, live, warmupPrompts);
          for (const concurrency of o.concurrency) {
            const run = new ModeRun(live, concurrency);
            await run.block(o, prompts, 0, prompts.length);
            finish(run);
          }
        } finally {
          await live.close();
        }
      }
    }
    if (marks)
      result.packet_accounts = await Promise.all(
        accounted.map(({ row, traces }) => marks.row(row.variant, row.concurrency, traces)),
      );
  } finally {
    timings?.close();
    marks?.close();
  }
  // The report lists each mode's runs together, in the order of --concurrency, however they were measured.
  const modeIndex = (r: RunRow) => modes.findIndex((m) => m.variant === r.variant);
  result.runs.sort(
    (x, y) =>
      modeIndex(x) - modeIndex(y) || o.concurrency.indexOf(x.concurrency) - o.concurrency.indexOf(y.concurrency),
  );
  // Two configs are compared as configs, even when one of them happens to run async_chunk: false.
  if (o.compareConfig || o.compareTracing || o.compareCompiled)
    result.config_ratios = configRatios(result.runs, modes[0].variant, modes[1].variant);
  else result.ratios = asyncSyncRatios(result.runs);
  result.goals = evaluateGoals(
    result.runs,
    result.ratios,
    result.limit,
    result.config_ratios,
    result.burst_limits,
    result.throughput_limits,
  );
  result.finished_at = new Date().toISOString();
  result.machine.load_avg_end = os.loadavg()[0];
  return result;
}

/**
 * Both servers up at once, every concurrency's prompts run in alternating halves (A B B A), so that drift in the
 * machine's speed and the first mode's warm-up fall on both modes alike. A config with remote stages keeps one
 * deployment at a time (its stage processes and Redis are per deployment): its modes run one after the other.
 */
export function interleaves(modes: readonly Mode[]): boolean {
  return modes.length > 1 && !modes.some((m) => m.config && remoteStagesOf(m.config.graph).length > 0);
}

/** The servers a run measures, from its target and its --compare-* option. */
export async function planModes(
  o: Pick<
    ServeBenchOptions,
    | 'target'
    | 'compareSync'
    | 'compareScheduling'
    | 'compareConfig'
    | 'comparePrefixCache'
    | 'compareRouting'
    | 'compareTracing'
    | 'compareCompiled'
  >,
): Promise<Mode[]> {
  const t = o.target;
  const variant = (asyncChunk: boolean) => (asyncChunk ? 'async' : 'sync');
  const of = (variantName: string, config: BenchConfig): Mode => ({
    variant: variantName,
    asyncChunk: config.graph.asyncChunk,
    scheduling: config.graph.scheduling,
    config,
    url: null,
  });
  if (t.kind === 'config') {
    const compares = [o.compareSync, o.compareConfig !== undefined, o.compareScheduling, o.comparePrefixCache];
    const others = [o.compareRouting !== undefined, o.compareTracing, o.compareCompiled];
    if ([...compares, ...others].filter(Boolean).length > 1)
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        'give one of --compare-sync, --compare-config, --compare-scheduling, --compare-prefix-cache and ' +
          '--compare-routing (or --compare-tracing)',
      );
    if (o.compareRouting !== undefined) return routingModes(t.file, o.compareRouting, of);
    if (o.compareCompiled) return compiledModes(await readBenchConfig(t.file), of);
    if (o.compareTracing) {
      const config = await readBenchConfig(t.file);
      return [
        { ...of('tracing-on', config), traced: true },
        { ...of('tracing-off', config), traced: false },
      ];
    }
    if (o.compareConfig !== undefined) {
      const files = [t.file, o.compareConfig];
      const configs = await Promise.all(files.map((f) => readBenchConfig(f)));
      const [a, b] = configVariants(files);
      return [of(a, configs[0]), of(b, configs[1])];
    }
    if (!o.compareSync && !o.compareScheduling && !o.comparePrefixCache) {
      const config = await readBenchConfig(t.file);
      return [of(variant(config.graph.asyncChunk), config)];
    }
    const [first, second] = o.compareSync
      ? [{ async_chunk: true }, { async_chunk: false }]
      : o.comparePrefixCache
        ? [{}, { prefix_cache: false as const }]
        : [{ scheduling: 'playback' as const }, { scheduling: 'fifo' as const }];
    const flag = o.compareSync ? 'sync' : o.comparePrefixCache ? 'prefix-cache' : 'scheduling';
    const [a, b] = await Promise.all([readBenchConfig(t.file, first), readBenchConfig(t.file, second)]);
    // Refused before the limit and the first mode spend minutes: see RemoteStageHost.open.
    if (remoteStagesOf(a.graph).length > 0)
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `--compare-${flag} runs a changed copy of ${t.file}, but its remote ` +
          'stages load the file as it is: write the variant to its own file and use --compare-config',
      );
    if (o.comparePrefixCache) return [of('cache', a), of('no-cache', b)];
    return o.compareSync ? [of('async', a), of('sync', b)] : [of('playback', a), of('fifo', b)];
  }
  if (o.compareRouting !== undefined)
    throw new ChorusError(ErrorCodes.REQUEST_INVALID, '--compare-routing needs --config (the bench starts both)');
  if (o.compareTracing || o.compareCompiled)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-${o.compareTracing ? 'tracing' : 'compiled'} needs --config (the bench starts both)`,
    );
  if (o.compareConfig !== undefined || o.compareScheduling || o.comparePrefixCache)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-${o.compareScheduling ? 'scheduling' : o.comparePrefixCache ? 'prefix-cache' : 'config'} needs ` +
        '--config (the bench starts both)',
    );
  const main = await describe(t.url, t.apiKey);
  const modes: Mode[] = [
    { variant: variant(main.async_chunk), asyncChunk: main.async_chunk, scheduling: null, config: null, url: t.url },
  ];
  if (o.compareSync) {
    if (!t.syncUrl)
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        '--compare-sync with --url needs --sync-url URL of a server running async_chunk: false (or use --config, ' +
          'and the bench starts both)',
      );
    const sync = await describe(t.syncUrl, t.apiKey);
    if (main.async_chunk === sync.async_chunk) {
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `--url and --sync-url both run async_chunk: ${main.async_chunk}; point them at an async and a sync server`,
      );
    }
    modes.push({
      variant: variant(sync.async_chunk),
      asyncChunk: sync.async_chunk,
      scheduling: null,
      config: null,
      url: t.syncUrl,
    });
  }
  return modes;
}

/** The two configs' names in the results: file names without .yaml, or paths from here where those collide. */
function configVariants(files: readonly string[]): [string, string] {
  const [a, b] = files.map((f) => path.basename(f).replace(/\.ya?ml$/, ''));
  if (a !== b) return [a, b];
  const [ra, rb] = files.map((f) => path.relative(process.cwd(), f) || f);
  if (ra === rb) throw new ChorusError(ErrorCodes.REQUEST_INVALID, `--compare-config ${rb} is --config itself`);
  return [ra, rb];
}

interface StagesInfo {
  readonly async_chunk: boolean;
  readonly stages: readonly {
    readonly kind: string;
    readonly model: { readonly source: string; readonly preset?: string };
  }[];
}

async function describe(url: string, apiKey: string | null): Promise<StagesInfo> {
  let res: Response;
  try {
    res = await fetch(`${url}/v1/stages`, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
  } catch (cause) {
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `cannot reach ${url}: ${(cause as Error).message}; is \`chorus serve\` running there?`,
      { cause },
    );
  }
  if (!res.ok)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `GET ${url}/v1/stages answered HTTP ${res.status}; pass --api-key if the server needs one`,
    );
  return (await res.json()) as StagesInfo;
}

/** The tokenizer the prompts are counted with: the first mode's entry stage's, or a running server's. */
export async function benchTokenizer(
  o: Pick<ServeBenchOptions, 'target' | 'log'>,
  modes: readonly Mode[],
): Promise<Tokenizer> {
  const first = modes[0].config;
  return first ? tokenizerOf(first.graph) : remoteTokenizer(o.target as Extract<BenchTarget, { kind: 'url' }>, o.log);
}

/** The entry stage's tokenizer: what a prompt's length is counted in. */
export function tokenizerOf(graph: StageGraph): Tokenizer {
  const entry = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
  return createTokenizer(
    entry.model,
    entry.model.source === 'generated' && entry.model.kind === 'thinker' ? entry.model.size : undefined,
  );
}

/** A remote server's generated Thinker uses the byte tokenizer of its preset's vocabulary. */
async function remoteTokenizer(t: Extract<BenchTarget, { kind: 'url' }>, log: Logger): Promise<Tokenizer> {
  const info = await describe(t.url, t.apiKey);
  const thinker = info.stages.find((s) => s.kind === 'thinker');
  const preset = thinker?.model.preset !== undefined ? presets[thinker.model.preset] : undefined;
  if (preset) return new ByteTokenizer(preset.thinker.vocabSize);
  log.warn(
    'the server does not run a generated thinker preset: prompt lengths are counted with the tiny byte tokenizer ' +
      'and may differ on the server (results.json records the served prompt_tokens)',
  );
  return new ByteTokenizer(512);
}

/**
 * --compare-routing POLICY: the config as it is (named by its routing policy) against the same with `routing:
 * POLICY`. Routing chooses among instances: a config with one instance of every routed stage compares nothing.
 */
async function routingModes(
  file: string,
  policy: RoutingPolicy,
  of: (variant: string, config: BenchConfig) => Mode,
): Promise<Mode[]> {
  const [a, b] = await Promise.all([readBenchConfig(file), readBenchConfig(file, { routing: policy })]);
  if (a.graph.routing === policy)
    throw new ChorusError(ErrorCodes.REQUEST_INVALID, `${file} already routes by ${policy}: compare another policy`);
  const entry = a.graph.stages.find((s) => s.stageId === a.graph.entryStageId)!;
  if (entry.replicas < 2 && remoteStagesOf(a.graph).length === 0)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `${file}: --compare-routing needs several instances to choose from: set replicas: 2 (or more) on the ` +
        `${entry.stageId} stage`,
    );
  if (remoteStagesOf(a.graph).length > 0)
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-routing runs a changed copy of ${file}, but its remote stages load the file as it is: write the ` +
        'variant to its own file and use --compare-config',
    );
  return [of(a.graph.routing, a), of(policy, b)];
}

/** --compare-compiled: the config's stage processes from dist/ and through tsx; refused without a build. */
function compiledModes(config: BenchConfig, of: (name: string, config: BenchConfig) => Mode): Mode[] {
  const entry = new URL('../../dist/stages/stageEntry.js', import.meta.url);
  if (!existsSync(entry))
    throw new ChorusError(
      ErrorCodes.REQUEST_INVALID,
      `--compare-compiled starts stage processes from the build, and there is none (${fileURLToPath(entry)}): ` +
        'run `npm run build` first',
    );
  return [
    { ...of('compiled', config), compiled: true },
    { ...of('tsx', config), compiled: false },
  ];
}
