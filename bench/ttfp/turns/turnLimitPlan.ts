/**
 * The per-turn limit of `chorus bench --turns` (issue 27: "turn N against its own critical path"), its pure parts:
 * what each measured turn index computes over what cached past (from the run's own usage figures), and the limit
 * set beside the turn's TTFP. The runners are timed in bench/limit/runTurnLimits.ts.
 *
 * With a cached prefix a turn still computes its new positions over a past as long as the conversation, so its
 * floor grows with the history (attention over the past): turn 20 is measured against turn 20's limit, not turn 1's.
 */
import type { LimitParts } from '../../limit/runLimit.ts';
import type { TurnRow } from './turnStats.ts';

/** The goal: TTFP at most this many times the turn's limit, at every turn index, c=1. */
export const TTFP_OVER_LIMIT_GOAL = 1.3;

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

/**
 * The plans of `turns` (turn indexes, 1-based) from a run's rows; a turn without usage (all of it failed, or a
 * server that reports none) has no plan. `talkerBlockPositions`: the Talker's prefix cache block, null when off.
 */
export function planTurnLimits(
  rows: readonly TurnRow[],
  turns: readonly number[],
  talkerBlockPositions: number | null,
): TurnLimitPlan[] {
  return turns.flatMap((turn) => {
    const row = rows.find((r) => r.turn === turn);
    const input = row?.p50_input_tokens ?? null;
    if (!row || input === null || input < 1) return [];
    const inputTokens = Math.round(input);
    const cachedTokens = Math.min(Math.round(row.p50_cached_tokens ?? 0), inputTokens - 1);
    // The last earlier turn that reported its input (a refused turn never reached the Talker); turn 1: none before.
    const earlier = rows.filter((r) => r.turn < turn && r.p50_input_tokens !== null).at(-1);
    const previous = turn === 1 ? Infinity : (earlier?.p50_input_tokens ?? 0);
    const block = talkerBlockPositions ?? 0;
    const talkerCachedRows = block > 0 ? Math.floor(Math.min(cachedTokens, previous) / block) * block : 0;
    return [{ turn, input_tokens: inputTokens, cached_tokens: cachedTokens, talker_cached_rows: talkerCachedRows }];
  });
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

/** Each limit beside the run's TTFP at its turn index. */
export function limitRows(limits: readonly TurnLimit[], rows: readonly TurnRow[]): TurnLimitRow[] {
  return limits.map((l) => {
    const ttfp = rows.find((r) => r.turn === l.turn)?.p50_ttfp_ms ?? null;
    const total = l.median.total_ms;
    return {
      ...l,
      p50_ttfp_ms: ttfp,
      ttfp_over_limit: ttfp === null || !(total > 0) ? null : ttfp / total,
    };
  });
}

/** The turn with the largest TTFP / limit (null when no turn has both). */
export function worstTurn(rows: readonly TurnLimitRow[]): TurnLimits['worst'] {
  let worst: TurnLimits['worst'] = null;
  for (const r of rows)
    if (r.ttfp_over_limit !== null && (worst === null || r.ttfp_over_limit > worst.ttfp_over_limit))
      worst = { turn: r.turn, ttfp_over_limit: r.ttfp_over_limit };
  return worst;
}
