/**
 * The shape of DIR/results.json for `chorus bench --turns` (snake_case like the TTFP bench's): one run per mode
 * and concurrency, each with a row per turn index, and with two modes the first's p50s over the second's per turn.
 */
import type { Machine } from '../results.ts';
import type { TurnLimits } from './turnLimitPlan.ts';
import type { TurnRatio, TurnRow } from './turnStats.ts';

export interface TurnsRun {
  /** Which server: the config's name (--compare-config), async or sync. */
  readonly variant: string;
  readonly async_chunk: boolean;
  readonly scheduling: string | null;
  readonly concurrency: number;
  readonly conversations: number;
  /** Turns per conversation (--turns). */
  readonly turns_per_conversation: number;
  readonly completed: number;
  readonly failed: number;
  /** Time the run's conversations were in flight: the sum over its blocks. */
  readonly duration_s: number;
  /** Blocks of conversations the run was measured in (2 when two modes alternate, else 1). */
  readonly blocks: number;
  readonly turns: readonly TurnRow[];
}

/** The first mode's p50s over the second's, by turn index, at one concurrency (lower is better). */
export interface TurnsModeRatio {
  readonly concurrency: number;
  readonly variant: string;
  readonly over_variant: string;
  readonly turns: readonly TurnRatio[];
}

export interface TurnsResult {
  readonly tool: 'chorus bench --turns';
  readonly started_at: string;
  finished_at: string;
  readonly command: string;
  readonly git_sha: string;
  readonly machine: Machine;
  readonly target: {
    readonly kind: 'config' | 'url';
    readonly file?: string;
    readonly url?: string;
    readonly compare_file?: string;
  };
  /** sha256 of each YAML as run, by variant (as_is for a lone run). */
  readonly config_sha256: Readonly<Record<string, string>>;
  readonly remote_stages: Record<string, string>;
  readonly options: {
    readonly protocol: string;
    readonly concurrency: readonly number[];
    readonly turns: number;
    /** Conversations per concurrency; null: twice the concurrency. */
    readonly conversations: number | null;
    /** Tokens in each user message. */
    readonly input_len: number;
    /** max_output_tokens (max_tokens) of every answer, with ignore_eos. */
    readonly output_len: number;
    readonly warmup: number;
    readonly seed: number;
    readonly initial_codec_chunk_frames: number | null;
    readonly ttfp_target_ms: number | null;
    /** Both servers up, each concurrency's conversations in halves A B B A. */
    readonly interleaved: boolean;
  };
  readonly runs: TurnsRun[];
  ratios: TurnsModeRatio[];
  /**
   * The per-turn limit of the first mode's c=1 run (its turn indexes: those the table shows), each beside that
   * turn's TTFP p50; null with --skip-limit, --url, or no c=1 run.
   */
  turn_limits: TurnLimits | null;
}
