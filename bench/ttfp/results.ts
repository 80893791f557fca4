/**
 * The shape of DIR/results.json (snake_case, as vLLM's bench writes its JSON), and the goals the issue sets.
 * Every field a run row has is a plain number or null, so the JSON diffs and plots cleanly.
 */
import { gitSha, machineInfo, type Machine } from '../common.ts';
import os from 'node:os';
import type { LimitResult } from '../limit/limitResult.ts';
import type { ThroughputLimit } from '../limit/throughputLimit.ts';
import { requestMetrics, slowestByTtfp, type Distribution, type RunMetrics, type SlowRequest } from './metrics.ts';
import { cpuBoundRps } from './cpuTime.ts';
import type { RequestTrace } from './trace.ts';
import type { ServerSideTiming } from './ServerTimings.ts';
import type { AccountSummary, SlowPacket } from './account/packetAccount.ts';

export interface RunRow {
  /** Which server the run measured: async or sync (--compare-sync), or the config's name (--compare-config). */
  readonly variant: string;
  readonly async_chunk: boolean;
  /** How the server's Talker and Code2Wav ordered work (playback or fifo); null when the server did not say. */
  readonly scheduling: string | null;
  readonly concurrency: number;
  readonly num_prompts: number;
  readonly completed: number;
  readonly failed: number;
  readonly input_len: number;
  readonly output_len: number;
  /** Code2Wav's max_num_seqs (chunks decoded together); null when the server's config is unknown. */
  readonly code2wav_batch: number | null;
  /**
   * Codec frames Code2Wav ran through its vocoder per frame of audio it sent during the run (server /metrics):
   * ~2 when each chunk re-decodes its left context, 1 with a stateful vocoder; null when the server did not say.
   */
  readonly code2wav_decode_ratio: number | null;
  /** Time the run's requests were in flight: the sum over its blocks (see options.interleaved). */
  readonly duration_s: number;
  /** Blocks of prompts the run was measured in (2 when two modes alternate, else 1). */
  readonly blocks: number;
  readonly request_throughput: number;
  readonly mean_ttft_ms: number | null;
  readonly p50_ttft_ms: number | null;
  readonly p99_ttft_ms: number | null;
  readonly mean_tpot_ms: number | null;
  readonly p50_tpot_ms: number | null;
  readonly p99_tpot_ms: number | null;
  readonly mean_itl_ms: number | null;
  readonly p50_itl_ms: number | null;
  readonly p99_itl_ms: number | null;
  readonly mean_ttfp_ms: number | null;
  readonly p50_ttfp_ms: number | null;
  readonly p99_ttfp_ms: number | null;
  readonly mean_e2e_ms: number | null;
  readonly p50_e2e_ms: number | null;
  readonly p99_e2e_ms: number | null;
  readonly mean_rtf: number | null;
  readonly p50_rtf: number | null;
  readonly p99_rtf: number | null;
  /** Stalls over 100 ms of the simulated player, summed over requests. */
  readonly underruns: number;
  readonly requests_with_underruns: number;
  readonly worst_stall_ms: number;
  readonly total_stall_ms: number;
  readonly audio_seconds: number;
  /** Audio in the first delta (the initial codec chunk as heard), ms. */
  readonly mean_first_audio_ms: number | null;
  readonly mean_prompt_tokens: number | null;
  readonly mean_text_tokens: number | null;
  /** A server the bench started only: the engine's and the front end's share of TTFP (see ServerTimings). */
  readonly mean_engine_ttfp_ms: number | null;
  readonly mean_server_ttfp_ms: number | null;
  /** The per-request TTFP target sent (--ttfp-target-ms), and the share of completed requests that met it. */
  readonly ttfp_target_ms: number | null;
  readonly ttfp_target_met: number | null;
  /**
   * CPU ms per completed request of each process on this machine over the run (bench/ttfp/cpuTime.ts): the
   * stage processes by instance, `main` (the process of a server the bench started) and `bench`, this process (the
   * clients).
   */
  readonly cpu_ms_per_request: Readonly<Record<string, number>> | null;
  /**
   * A server the bench started only (every process of the deployment counted): req/s the machine's cores allow at that
   * CPU per request if they never idled. req/s near it: the run was CPU-bound.
   */
  readonly cpu_bound_rps: number | null;
  readonly errors: readonly string[];
  /**
   * The requests with the latest first packet (at most SLOWEST_SHOWN), with the trace id the client sent: the
   * trace to open when the server exports traces (docs/tracing.md). Absent in results from before it existed.
   */
  readonly slowest_ttfp?: readonly SlowRequest[];
}

/** Slowest requests a run names (RunRow.slowest_ttfp). */
const SLOWEST_SHOWN = 3;

export interface Ratio {
  readonly concurrency: number;
  readonly ttfp_async_over_sync: number | null;
  readonly p50_ttfp_async_over_sync: number | null;
  readonly ttft_async_over_sync: number | null;
  readonly e2e_async_over_sync: number | null;
  readonly rtf_async_over_sync: number | null;
}

/** One variant's run over another's at one concurrency (means unless p50); lower is better for TTFP. */
export interface VariantRatio {
  readonly concurrency: number;
  readonly ttfp: number | null;
  readonly p50_ttfp: number | null;
  readonly ttft: number | null;
  readonly e2e: number | null;
  readonly rtf: number | null;
}

/** --config over --compare-config. */
export interface ConfigRatio extends VariantRatio {
  /** The variant names of the two configs (RunRow.variant). */
  readonly config: string;
  readonly compare_config: string;
}

export interface Goal {
  readonly name: string;
  readonly value: number;
  readonly target: string;
  readonly met: boolean;
}

/** A goal of `value` at most (`<=`) or at least (`>=`) `bound`; `<=` with the target written `= bound` for counts. */
export function goalOf(name: string, value: number, op: '<=' | '>=' | '=', bound: number): Goal {
  return { name, value, target: `${op} ${bound}`, met: op === '>=' ? value >= bound : value <= bound };
}

export interface BenchResult {
  readonly tool: 'chorus bench';
  readonly started_at: string;
  finished_at: string;
  readonly command: string;
  readonly git_sha: string;
  readonly machine: Machine;
  readonly target: {
    readonly kind: 'config' | 'url';
    readonly file?: string;
    readonly url?: string;
    /** --compare-config FILE. */
    readonly compare_file?: string;
  };
  /**
   * sha256 of the YAML as run, per variant (async and sync differ only in async_chunk; with --compare-config, one
   * per config's name); as_is for a lone run.
   */
  readonly config_sha256: {
    readonly async?: string;
    readonly sync?: string;
    readonly as_is?: string;
    readonly [variant: string]: string | undefined;
  };
  /** Per variant with remote stages: the `chorus stage` processes the bench started, and the Redis they used. */
  readonly remote_stages: Record<string, string>;
  readonly options: {
    readonly protocol: string;
    readonly concurrency: readonly number[];
    readonly num_prompts: number;
    readonly input_len: number;
    readonly output_len: number;
    readonly warmup: number;
    readonly seed: number;
    /** The per-request override sent, or null (the server's chunk policy decided). */
    readonly initial_codec_chunk_frames: number | null;
    readonly ttfp_target_ms: number | null;
    /**
     * Two modes measured with both servers up, each concurrency's prompts in halves A B B A (drift and warm-up
     * fall on both); false: one mode after the other (one mode, or a config with remote stages). Absent in older
     * results.
     */
    readonly interleaved?: boolean;
  };
  /**
   * The critical path of a lone request's first packet (the c=1 goal's denominator): the median over the packets
   * measured right before and right after each c=1 block, the machine of the same seconds as the c=1 TTFPs (since
   * 2026-12-06; before, the median over every packet of the run, `limit_whole_run` now). The machine's speed moves
   * it by a third within minutes (issue 46; bench/NOTES.md, "The limit beside the c=1 blocks").
   */
  limit: LimitResult | null;
  /** The median over every packet of the run (before the runs, beside the c=1 blocks, after), when `limit` is not. */
  limit_whole_run?: LimitResult;
  /** Each measure's median (total ms): before the runs, beside the c=1 blocks, after; absent in older results. */
  limit_measures_ms?: readonly number[];
  /** Which of the measures were taken beside a c=1 block (the packets `limit` is the median of). */
  limit_measures_beside?: readonly boolean[];
  /**
   * The same measures' medians of the process's CPU time a packet (ms): a measure whose wall time is above its CPU
   * time waited for a core; one whose CPU time moved found the machine slower.
   */
  limit_measures_cpu_ms?: readonly number[];
  /** The same for a burst of c requests batched together, for every concurrency c > 1 measured. */
  burst_limits: LimitResult[];
  /** The whole compute of c requests at batch c, per concurrency: the req/s the models allow (runThroughput.ts). */
  throughput_limits: ThroughputLimit[];
  readonly runs: RunRow[];
  ratios: Ratio[];
  /** --compare-config only. */
  config_ratios: ConfigRatio[];
  goals: Goal[];
  /**
   * Where the c=1 runs' first packets (and a steady-state chunk's trip) spent their time, per mode
   * (account/packetAccount.ts); absent without a server the bench started, or in older results.
   */
  packet_accounts?: PacketAccountRow[];
}

export interface PacketAccountRow {
  readonly variant: string;
  readonly concurrency: number;
  /** Requests whose marks made an account, of those measured. */
  readonly accounted: number;
  readonly measured: number;
  readonly first_packet: AccountSummary | null;
  /** The middle audio delta of each answer, from the Talker's hand-off to the client. */
  readonly chunk_trip: AccountSummary | null;
  /** The slowest first packets, each with the parts it spent beyond the mean (absent in older results). */
  readonly slowest_first?: readonly SlowPacket[];
}

function meanOf(values: readonly (number | undefined)[]): number | null {
  const present = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return present.length === 0 ? null : present.reduce((a, b) => a + b, 0) / present.length;
}

export interface RowContext {
  /** Default: async or sync, after asyncChunk. */
  readonly variant?: string;
  readonly asyncChunk: boolean;
  readonly scheduling?: string | null;
  readonly ttfpTargetMs?: number | null;
  readonly concurrency: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly code2wavBatch: number | null;
  readonly code2wavDecodeRatio?: number | null;
  readonly durationMs: number;
  /** Blocks the run was measured in (default 1). */
  readonly blocks?: number;
  readonly traces: readonly RequestTrace[];
  readonly serverTiming?: (requestId: string | undefined) => ServerSideTiming | undefined;
  /** CPU ms of each process over the run (cpuTime.ts), and whether main's was among them (the bench's own server). */
  readonly cpuMs?: ReadonlyMap<string, number>;
  readonly cpuCountsServer?: boolean;
  /** Each stage's intra-op threads by stage id, when the bench knows the graph (cpuBoundRps). */
  readonly stageThreads?: ReadonlyMap<string, number>;
}

function cpuFigures(c: RowContext, completed: number): Pick<RunRow, 'cpu_ms_per_request' | 'cpu_bound_rps'> {
  if (!c.cpuMs || c.cpuMs.size === 0 || completed === 0) return { cpu_ms_per_request: null, cpu_bound_rps: null };
  const perRequest = Object.fromEntries([...c.cpuMs].map(([name, ms]) => [name, ms / completed]));
  return {
    cpu_ms_per_request: perRequest,
    cpu_bound_rps: c.cpuCountsServer ? cpuBoundRps(os.availableParallelism(), perRequest, c.stageThreads) : null,
  };
}

export function toRunRow(m: RunMetrics, c: RowContext): RunRow {
  const d = (name: string, x: Distribution) => ({
    [`mean_${name}`]: x.mean,
    [`p50_${name}`]: x.p50,
    [`p99_${name}`]: x.p99,
  });
  const ok = c.traces.filter((t) => t.ok);
  const timing = c.serverTiming ? ok.map((t) => c.serverTiming!(t.requestId)) : [];
  const target = c.ttfpTargetMs ?? null;
  const ttfps = ok.map((t) => requestMetrics(t).ttfpMs).filter((x): x is number => x !== null);
  const row = {
    variant: c.variant ?? (c.asyncChunk ? 'async' : 'sync'),
    async_chunk: c.asyncChunk,
    scheduling: c.scheduling ?? null,
    concurrency: c.concurrency,
    num_prompts: c.traces.length,
    completed: m.completed,
    failed: m.failed,
    input_len: c.inputLen,
    output_len: c.outputLen,
    code2wav_batch: c.code2wavBatch,
    code2wav_decode_ratio: c.code2wavDecodeRatio ?? null,
    duration_s: c.durationMs / 1000,
    blocks: c.blocks ?? 1,
    request_throughput: m.completed / (c.durationMs / 1000),
    ...d('ttft_ms', m.ttft),
    ...d('tpot_ms', m.tpot),
    ...d('itl_ms', m.itl),
    ...d('ttfp_ms', m.ttfp),
    ...d('e2e_ms', m.e2e),
    ...d('rtf', m.rtf),
    underruns: m.underruns,
    requests_with_underruns: m.requestsWithUnderruns,
    worst_stall_ms: m.worstStallMs,
    total_stall_ms: m.totalStallMs,
    audio_seconds: m.audioSeconds,
    mean_first_audio_ms: m.firstAudio.mean,
    mean_prompt_tokens: meanOf(ok.map((t) => t.promptTokens)),
    mean_text_tokens: meanOf(ok.map((t) => t.textTokens)),
    mean_engine_ttfp_ms: meanOf(timing.map((t) => t?.engineTtfpMs)),
    mean_server_ttfp_ms: meanOf(timing.map((t) => t?.serverTtfpMs)),
    ttfp_target_ms: target,
    ttfp_target_met:
      target === null || ttfps.length === 0 ? null : ttfps.filter((x) => x <= target).length / ttfps.length,
    ...cpuFigures(c, m.completed),
    errors: m.errors,
  } as RunRow;
  return { ...row, slowest_ttfp: slowestByTtfp(c.traces, SLOWEST_SHOWN) };
}

/** The provenance every bench result starts with: when, which commit and machine, what it ran against. */
export type ResultHeader = Pick<
  BenchResult,
  'started_at' | 'finished_at' | 'command' | 'git_sha' | 'machine' | 'target' | 'remote_stages'
> & { readonly config_sha256: Readonly<Record<string, string>> };

/** The header of a run against `target` with these modes (config hashes per variant; as_is for a lone run). */
export function resultHeader(
  o: {
    readonly command: string;
    readonly target: { kind: 'config'; file: string } | { kind: 'url'; url: string };
    readonly compareConfig?: string;
  },
  modes: readonly { readonly variant: string; readonly config: { readonly graph: { configHash?: string } } | null }[],
): ResultHeader {
  return {
    started_at: new Date().toISOString(),
    finished_at: '',
    command: o.command,
    git_sha: gitSha(),
    machine: machineInfo(),
    target:
      o.target.kind === 'config'
        ? { kind: 'config', file: o.target.file, ...(o.compareConfig ? { compare_file: o.compareConfig } : {}) }
        : { kind: 'url', url: o.target.url },
    config_sha256: Object.fromEntries(
      modes.flatMap((m) =>
        m.config?.graph.configHash ? [[modes.length > 1 ? m.variant : 'as_is', m.config.graph.configHash]] : [],
      ),
    ),
    remote_stages: {},
  };
}

/** The result with its end stamped (time, and the 1-minute load: the machine may be shared). */
export function finished<R extends { finished_at: string; readonly machine: Machine }>(result: R): R {
  result.finished_at = new Date().toISOString();
  result.machine.load_avg_end = os.loadavg()[0];
  return result;
}
