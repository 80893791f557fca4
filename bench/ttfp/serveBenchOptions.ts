/**
 * What `chorus bench` (the TTFP bench) is told to do: runServeBench.ts runs it, modeRun.ts measures one mode of it.
 */
import type { Logger } from '../../src/index.ts';
import type { Protocol } from './clients/BenchClient.ts';
import type { RunRow } from './results.ts';
import type { ServerTimingLookup } from './ServerTimings.ts';
import type { RequestTrace } from './trace.ts';

export type BenchTarget =
  | { readonly kind: 'config'; readonly file: string }
  | { readonly kind: 'url'; readonly url: string; readonly syncUrl?: string; readonly apiKey: string | null };

export interface ServeBenchOptions {
  readonly target: BenchTarget;
  readonly protocol: Protocol;
  readonly concurrency: readonly number[];
  readonly numPrompts: number;
  readonly inputLen: number;
  readonly outputLen: number;
  readonly warmup: number;
  readonly seed: number;
  readonly compareSync: boolean;
  /** Also run the same YAML with scheduling: fifo (the first run is scheduling: playback). */
  readonly compareScheduling?: boolean;
  /** Runs the config as it is and with every stage's prefix cache off (variants "cache" and "no-cache"). */
  readonly comparePrefixCache?: boolean;
  /** The same config with its stage processes compiled (dist/) and through tsx, side by side. */
  readonly compareCompiled?: boolean;
  /** A second config run after --config's (--config target only); ratios are --config over it. */
  readonly compareConfig?: string;
  /** The Redis for configs with remote stages (default CHORUS_REDIS_URL, else a redis-server of the bench's own). */
  readonly redisUrl?: string;
  /** How long remote stage processes may take to join (default 180 s). */
  readonly joinTimeoutMs?: number;
  /** Per-request initial codec chunk (Chorus extension); default: the server's chunk policy. */
  readonly initialCodecChunkFrames?: number;
  /** Per-request TTFP target (Chorus extension); each run reports how many requests met it. */
  readonly ttfpTargetMs?: number;
  /** Per request (default 300 s: a sync answer at c=10 on 2 cores is long). */
  readonly timeoutMs?: number;
  /** Measure the critical-path limit (--config only; default true). */
  readonly limit?: boolean;
  readonly limitRepeats?: number;
  /** Measured passes of the throughput limit per concurrency (default 5, after one warm-up pass). */
  readonly throughputRepeats?: number;
  /** Where the progress bar goes (stderr in the CLI); null for none. */
  readonly progress: (NodeJS.WritableStream & { isTTY?: boolean }) | null;
  readonly log: Logger;
  /** The command line, recorded in the results. */
  readonly command: string;
  /**
   * Where the stage processes write their step traces (CHORUS_STEP_TRACE_DIR, set by the caller before the servers
   * start): with servers the bench starts, the c=1 runs then get their first-packet account
   * (BenchResult.packet_accounts).
   */
  readonly stepTraceDir?: string;
  /** Called after each run with its row and its raw traces (the CLI writes them to DIR/requests.json). */
  readonly onRun?: (row: RunRow, traces: readonly RequestTrace[], serverTiming: ServerTimingLookup | null) => void;
}

/** What opening a mode's server, warming it up and loading it read of the options (the closed-loop TTFP bench). */
export type ModeOptions = Pick<
  ServeBenchOptions,
  | 'target'
  | 'redisUrl'
  | 'joinTimeoutMs'
  | 'log'
  | 'progress'
  | 'protocol'
  | 'outputLen'
  | 'seed'
  | 'timeoutMs'
  | 'initialCodecChunkFrames'
  | 'ttfpTargetMs'
  | 'stepTraceDir'
>;
