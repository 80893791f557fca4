/**
 * One mode of a `chorus bench` run at work: its server started (or reached by URL), warmed up, and measured at a
 * concurrency over one or more blocks of the prompts (runServeBench.ts alternates two modes' blocks).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ChorusError, ErrorCodes, type SchedulingPolicy } from '../../src/basics.ts';
import type { BenchClient, ClientTarget } from './clients/BenchClient.ts';
import { ChatBenchClient } from './clients/ChatBenchClient.ts';
import { RealtimeBenchClient } from './clients/RealtimeBenchClient.ts';
import { addFrames, decodeRatio, framesBetween, settledCode2WavFrames, type Code2WavFrames } from './code2wavFrames.ts';
import { addCpuBetween, cpuSnapshot } from './cpuTime.ts';
import type { BenchConfig } from './inProcessServer.ts';
import { remoteStagesOf } from './RemoteStageHost.ts';
import { summarizeRun } from './metrics.ts';
import { ProgressBar } from './ProgressBar.ts';
import { toRunRow, type BenchResult, type RunRow } from './results.ts';
import type { ModeOptions, ServeBenchOptions } from './serveBenchOptions.ts';
import { runLoad, type LoadShape } from './runLoad.ts';
import { ServerProcess } from './serverProcess.ts';
import type { ServerSideTiming, ServerTimingLookup } from './ServerTimings.ts';
import type { PacketMark } from '../../src/basics.ts';
import type { RequestTrace } from './trace.ts';

/**
 * One server to measure: its name in the results, its address, its async_chunk and scheduling (null: a server
 * that does not say), and (a server the bench starts) its config.
 */
export interface Mode {
  readonly variant: string;
  readonly asyncChunk: boolean;
  readonly scheduling: SchedulingPolicy | null;
  readonly config: BenchConfig | null;
  readonly url: string | null;
  /** --compare-compiled: whether its stage processes run dist/ (inProcessServer.ts); absent: as the env says. */
  readonly compiled?: boolean;
}

/**
 * A mode's server, running: where its clients connect, its process (the bench started it: main's marks, times and CPU
 * are read off it), and how to stop it (a no-op for --url).
 */
export interface LiveMode {
  readonly mode: Mode;
  readonly target: ClientTarget;
  readonly server: ServerProcess | null;
  close(): Promise<void>;
}

export async function openMode(
  o: ModeOptions,
  mode: Mode,
  result: Pick<BenchResult, 'remote_stages'>,
): Promise<LiveMode> {
  const server = mode.config
    ? await ServerProcess.start(mode.config, {
        marks: o.stepTraceDir !== undefined,
        ...(o.redisUrl !== undefined ? { redisUrl: o.redisUrl } : {}),
        ...(o.joinTimeoutMs !== undefined ? { joinTimeoutMs: o.joinTimeoutMs } : {}),
        ...(mode.compiled !== undefined ? { compiled: mode.compiled } : {}),
      })
    : null;
  if (server?.remote) result.remote_stages[mode.variant] = server.remote;
  return {
    mode,
    target: {
      baseUrl: server?.baseUrl ?? mode.url!,
      apiKey: o.target.kind === 'url' ? o.target.apiKey : null,
    },
    server,
    close: async () => {
      await server?.close();
    },
  };
}

/** How a load on a live mode makes its requests and clients (closed or open loop), `bar` ticked as each ends. */
export function loadOn(o: ModeOptions, live: LiveMode, bar: ProgressBar | null): Omit<LoadShape, 'prompts' | 'seed'> {
  return {
    outputLen: o.outputLen,
    timeoutMs: o.timeoutMs ?? 300_000,
    chunking: {
      ...(o.initialCodecChunkFrames !== undefined ? { initialCodecChunkFrames: o.initialCodecChunkFrames } : {}),
      ...(o.ttfpTargetMs !== undefined ? { ttfpTargetMs: o.ttfpTargetMs } : {}),
    },
    openClient: (): Promise<BenchClient> =>
      o.protocol === 'realtime'
        ? RealtimeBenchClient.connect(live.target)
        : Promise.resolve(new ChatBenchClient(live.target)),
    onRequestDone: (t) => bar?.tick(t.ok),
  };
}

/** Prompts [from, to) at one concurrency on one live mode; request i keeps seed + i wherever it runs. */
function load(
  o: ModeOptions,
  live: LiveMode,
  name: string,
  list: readonly string[],
  concurrency: number,
  firstIndex = 0,
): ReturnType<typeof runLoad> {
  const bar = o.progress ? new ProgressBar(o.progress, name, list.length) : null;
  return runLoad({ ...loadOn(o, live, bar), prompts: list, concurrency, seed: o.seed + firstIndex }).finally(() =>
    bar?.finish(),
  );
}

/**
 * A mode opened and warmed up; a warm-up that fails closes it before the error goes on (its server and stage
 * processes would otherwise keep the bench alive after it reported the failure).
 */
export async function openWarmed(
  o: ModeOptions,
  mode: Mode,
  result: Pick<BenchResult, 'remote_stages'>,
  warmupPrompts: readonly string[],
): Promise<LiveMode> {
  return warmedOrClosed(await openMode(o, mode, result), (live) => warmUp(o, live, warmupPrompts));
}

/** `live` once `warm` has run on it, or closed when `warm` throws (then the error is thrown on). */
export async function warmedOrClosed(live: LiveMode, warm: (live: LiveMode) => Promise<void>): Promise<LiveMode> {
  try {
    await warm(live);
    return live;
  } catch (err) {
    await live.close();
    throw err;
  }
}

export async function warmUp(o: ModeOptions, live: LiveMode, warmupPrompts: readonly string[]): Promise<void> {
  if (warmupPrompts.length === 0) return;
  const w = await load(o, live, `${live.mode.variant} warm-up`, warmupPrompts, 1);
  const failed = w.traces.find((t) => !t.ok);
  if (failed)
    throw new ChorusError(
      ErrorCodes.STAGE_FAILED,
      `the warm-up request failed (${failed.error}); is the server healthy?`,
    );
}

/** One row of the results (a mode at a concurrency), measured over one or more blocks of the prompts. */
export class ModeRun {
  readonly #traces: RequestTrace[] = [];
  #durationMs = 0;
  #frames: Code2WavFrames | null = { framesDecoded: 0, audioFrames: 0 };
  readonly #cpuMs = new Map<string, number>();
  #blocks = 0;
  /** What main heard of this run's requests (a server the bench started; none for --url). */
  readonly #marks: PacketMark[] = [];
  readonly #timings = new Map<string, ServerSideTiming>();

  constructor(
    private readonly live: LiveMode,
    private readonly concurrency: number,
  ) {}

  async block(o: ServeBenchOptions, prompts: readonly string[], from: number, to: number): Promise<void> {
    if (to <= from) return;
    const { target, mode } = this.live;
    const part = to - from < prompts.length ? ` [${from}, ${to})` : '';
    // Settled first: the warm-up's or the previous block's last frames may still be on their way to the totals.
    const before = await settledCode2WavFrames(target);
    const main = this.live.server?.pid;
    const cpuBefore = await cpuSnapshot(target, main);
    const run = await load(
      o,
      this.live,
      `${mode.variant} c=${this.concurrency}${part}`,
      prompts.slice(from, to),
      this.concurrency,
      from,
    );
    addCpuBetween(this.#cpuMs, cpuBefore, await cpuSnapshot(target, main));
    if (this.live.server) {
      const ids = run.traces.flatMap((t) => (t.requestId === undefined ? [] : [t.requestId]));
      const heard = await this.live.server.collect(ids);
      this.#marks.push(...heard.marks);
      for (const [id, t] of heard.timings) this.#timings.set(id, t);
    }
    const after = await settledCode2WavFrames(target);
    for (let i = 0; i < run.traces.length; i++) this.#traces[from + i] = run.traces[i];
    this.#durationMs += run.durationMs;
    this.#blocks++;
    this.#frames = addFrames(this.#frames, framesBetween(before, after));
  }

  /** Adds the run's row to the result; returns it with the run's traces and main's marks of them. */
  finish(
    o: ServeBenchOptions,
    result: BenchResult,
  ): { row: RunRow; traces: readonly RequestTrace[]; marks: readonly PacketMark[] } {
    const { mode } = this.live;
    const timings: ServerTimingLookup | null = this.live.server
      ? { get: (id) => (id === undefined ? undefined : this.#timings.get(id)) }
      : null;
    const traces = this.#traces.filter((t) => t !== undefined);
    const code2wav = mode.config?.graph.stages.find((s) => s.kind === 'code2wav');
    const row = toRunRow(summarizeRun(traces), {
      variant: mode.variant,
      asyncChunk: mode.asyncChunk,
      scheduling: mode.scheduling,
      ttfpTargetMs: o.ttfpTargetMs ?? null,
      concurrency: this.concurrency,
      inputLen: o.inputLen,
      outputLen: o.outputLen,
      code2wavBatch: code2wav?.engine.maxNumSeqs ?? null,
      code2wavDecodeRatio: decodeRatio(this.#frames),
      durationMs: this.#durationMs,
      blocks: this.#blocks,
      traces,
      cpuMs: this.#cpuMs,
      cpuCountsServer: mode.config !== null,
      stageThreads: new Map(mode.config?.graph.stages.map((s) => [s.stageId, s.engine.threads]) ?? []),
      ...(timings ? { serverTiming: (id: string | undefined) => timings.get(id) } : {}),
    });
    result.runs.push(row);
    o.onRun?.(row, traces, timings);
    return { row, traces, marks: this.#marks };
  }
}

/** One mode's run at one concurrency, measured over blocks [from, to) of its prompts. */
export interface BlockRun {
  /** Work of the bench's own before a block (the limit's measure beside it), before the heap is collected for it. */
  before?(): void;
  block(from: number, to: number): Promise<void>;
  finish(): void;
}

let fullCollection: (() => void) | null = null;

/**
 * Collects the bench's own heap in full before a block is measured. The bench's process holds the clients of both
 * modes and the critical-path limit's runners, and a mark-compact of that heap runs its marking on V8's helper
 * threads at nice 0, on the cores the stages (nice 8) compute on: one started by what another mode's block or the
 * limit left landed in this block's first packets (a Talker prefill 26 ms off its core, when the servers' mains ran
 * here too; bench/NOTES.md, "Main's collections in the stages' first packets"). Collected here, what a block meets
 * is its own garbage. Each server's main runs in its own process (serverProcess.ts), its heap left to grow 4x
 * between collections (src/engine/mainHeap.ts), as `chorus serve`'s is.
 */
export function collectBeforeBlock(): void {
  if (!fullCollection) {
    setFlagsFromString('--expose-gc');
    fullCollection = runInNewContext('gc') as () => void;
  }
  fullCollection();
}

/**
 * Every concurrency on every mode, each server opened (and warmed up) by `open` and closed whatever happens. Two
 * servers up at once (interleaves): each concurrency's items in halves A B B A, so that drift in the machine's speed
 * and the first mode's warm-up fall on both modes alike; else one server after the other. Each block starts on a
 * collected heap (collectBeforeBlock), after its run's own work before it (BlockRun.before).
 */
export async function overModes(
  modes: readonly Mode[],
  concurrency: readonly number[],
  open: (mode: Mode) => Promise<LiveMode>,
  itemsAt: (index: number) => number,
  start: (live: LiveMode, concurrency: number, index: number) => BlockRun,
): Promise<void> {
  const lives: LiveMode[] = [];
  try {
    if (interleaves(modes)) {
      for (const mode of modes) lives.push(await open(mode));
      for (const [index, c] of concurrency.entries()) {
        const [n, [a, b]] = [itemsAt(index), lives.map((live) => start(live, c, index))];
        const half = Math.ceil(n / 2);
        for (const [run, from, to] of [
          [a, 0, half],
          [b, 0, half],
          [b, half, n],
          [a, half, n],
        ] as const) {
          run.before?.();
          collectBeforeBlock();
          await run.block(from, to);
        }
        a.finish();
        b.finish();
      }
      return;
    }
    for (const mode of modes) {
      const live = await open(mode);
      lives.push(live);
      for (const [index, c] of concurrency.entries()) {
        const run = start(live, c, index);
        run.before?.();
        collectBeforeBlock();
        await run.block(0, itemsAt(index));
        run.finish();
      }
      await lives.pop()!.close();
    }
  } finally {
    await Promise.all(lives.map((live) => live.close()));
  }
}

/** The options every load's results.json records alike, and whether its two servers alternated (interleaves). */
export function loadOptions(
  o: {
    readonly outputLen: number;
    readonly warmup: number;
    readonly seed: number;
    readonly initialCodecChunkFrames?: number;
    readonly ttfpTargetMs?: number;
  },
  modes: readonly Mode[],
) {
  return {
    output_len: o.outputLen,
    warmup: o.warmup,
    seed: o.seed,
    initial_codec_chunk_frames: o.initialCodecChunkFrames ?? null,
    ttfp_target_ms: o.ttfpTargetMs ?? null,
    interleaved: interleaves(modes),
  };
}

/**
 * Both servers up at once, every concurrency's items in alternating halves (A B B A). A config with remote stages
 * keeps one deployment at a time (its stage processes and Redis are per deployment): its modes run one after the
 * other.
 */
export function interleaves(modes: readonly Mode[]): boolean {
  return modes.length > 1 && !modes.some((m) => m.config && remoteStagesOf(m.config.graph).length > 0);
}

/** Each mode's runs together, in the order of --concurrency, however they were measured. */
export function sortRuns<R extends { readonly variant: string; readonly concurrency: number }>(
  runs: R[],
  modes: readonly Mode[],
  concurrency: readonly number[],
): void {
  const modeIndex = (r: R) => modes.findIndex((m) => m.variant === r.variant);
  runs.sort(
    (x, y) => modeIndex(x) - modeIndex(y) || concurrency.indexOf(x.concurrency) - concurrency.indexOf(y.concurrency),
  );
}
