/**
 * The shape of DIR/results.json for `chorus bench --turns` (snake_case like the TTFP bench's): one run per mode
 * and concurrency, each with a row per turn index, and with two modes the first's p50s over the second's per turn.
 */
import type { LimitParts } from '../../limit/limitResult.ts';
import type { ResultHeader } from '../results.ts';
import type { ByTurnRatio, ConversationsRun, TurnUsage } from './byTurn.ts';

export interface TurnsRun extends ConversationsRun<TurnRow> {
  readonly async_chunk: boolean;
  readonly scheduling: string | null;
  /** Prompt positions the server computed over every answered turn (input minus cached); null without usage. */
  readonly computed_positions: number | null;
  /**
   * With --system-len and one turn per conversation: how many times the server computed the system prompt every
   * request began with (ideal: once per Thinker instance); null otherwise.
   */
  readonly system_computed_times: number | null;
}

/** The first mode's p50s over the second's, by turn index, at one concurrency (lower is better). */
export type TurnsModeRatio = ByTurnRatio<Omit<TurnRatio, 'turn'>>;

/** The provenance (ResultHeader: when, commit, machine, target, config hashes), then the run. */
export interface TurnsResult extends ResultHeader {
  readonly tool: 'chorus bench --turns';
  readonly options: {
    readonly protocol: string;
    readonly concurrency: readonly number[];
    readonly turns: number;
    /** Conversations per concurrency; null: twice the concurrency. */
    readonly conversations: number | null;
    /** Tokens in each user message. */
    readonly input_len: number;
    /** --system-len: tokens of the system prompt every conversation starts with; null: none. */
    readonly system_len: number | null;
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

/** One turn index (1 = each conversation's first turn) over a run's conversations. */
export interface TurnRow extends TurnUsage {
  /** p50s of the input and cached tokens (what the per-turn limit computes: bench/ttfp/turns/turnLimitPlan.ts). */
  readonly p50_input_tokens: number | null;
  readonly p50_cached_tokens: number | null;
  readonly mean_ttft_ms: number | null;
  readonly p50_ttft_ms: number | null;
  readonly p99_ttft_ms: number | null;
  readonly mean_ttfp_ms: number | null;
  readonly p50_ttfp_ms: number | null;
  readonly p99_ttfp_ms: number | null;
  readonly p50_e2e_ms: number | null;
  /** p50 at this turn over p50 at turn 1: how much slower a turn is for the history before it. */
  readonly ttft_over_turn1: number | null;
  readonly ttfp_over_turn1: number | null;
}

/** One variant's p50 over another's at each turn index (lower is better). */
export interface TurnRatio {
  readonly turn: number;
  readonly ttft: number | null;
  readonly ttfp: number | null;
}

/** What one turn index's limit computes. */
export interface TurnLimitPlan {
  readonly turn: number;
  /** Prompt positions of the turn (the p50 of the input tokens the server reported). */
  readonly input_tokens: number;
  /**
   * Thinker positions the turn adopted from the prefix cache (the p50 of the cached tokens the server reported),
   * at most input_tokens - 1: the last prompt position always runs, it samples the first token.
   */
  readonly cached_tokens: number;
  /**
   * The Talker's prompt rows already in its cache. The Talker keeps prompt positions only (rows past the prompt
   * were fed sampled frames), so a turn finds the whole blocks of the previous turn's prompt: floor(previous
   * input / block) * block (the last turn before it that reported usage), and never more than the Thinker adopted
   * (its rows are those positions'). The server does not report it: this is that estimate. Turn 1: what the
   * Thinker adopted (a prompt prefix other requests computed), in whole blocks; usually 0.
   */
  readonly talker_cached_rows: number;
}

/** A turn index's limit as measured (medians over the repeats). */
export interface TurnLimit extends TurnLimitPlan {
  /** Positions the Thinker's prefill computes: input - cached. */
  readonly thinker_new_positions: number;
  /** Prompt rows the Talker's prefill computes (input - its cached rows); token 0's row goes with them. */
  readonly talker_new_rows: number;
  readonly median: LimitParts;
  readonly min_total_ms: number;
}

export interface TurnLimitRow extends TurnLimit {
  /** The run's TTFP p50 at this turn index, and it over the limit (the goal: <= TTFP_OVER_LIMIT_GOAL). */
  readonly p50_ttfp_ms: number | null;
  readonly ttfp_over_limit: number | null;
}

/** results.json's turn_limits: the per-turn limit of one run (the first mode at c=1). */
export interface TurnLimits {
  readonly variant: string;
  readonly concurrency: number;
  readonly initial_chunk_frames: number;
  readonly thinker_decode_steps: number;
  readonly talker_decode_steps: number;
  readonly repeats: number;
  readonly warmup: number;
  readonly turns: readonly TurnLimitRow[];
  /** The largest TTFP / limit over the turns, where it was, and whether it is within the goal. */
  readonly worst: { readonly turn: number; readonly ttfp_over_limit: number } | null;
  readonly goal: number;
  readonly met: boolean | null;
}
