/**
 * The per-turn limit of `chorus bench --turns` (issue 27: "turn N against its own critical path"), its pure parts:
 * what each measured turn index computes over what cached past (from the run's own usage figures), and the limit
 * set beside the turn's TTFP. The runners are timed in bench/limit/runTurnLimits.ts.
 *
 * With a cached prefix a turn still computes its new positions over a past as long as the conversation, so its
 * floor grows with the history (attention over the past): turn 20 is measured against turn 20's limit, not turn 1's.
 */
import type { TurnLimit, TurnLimitPlan, TurnLimitRow, TurnLimits, TurnRow } from './turnsResult.ts';

export type { TurnLimit, TurnLimitPlan, TurnLimitRow, TurnLimits };

/** The goal: TTFP at most this many times the turn's limit, at every turn index, c=1. */
export const TTFP_OVER_LIMIT_GOAL = 1.3;

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
