/**
 * Per-turn-index figures of `chorus bench --turns`, from the traces of a run's conversations: for each turn index,
 * TTFT and TTFP over the conversations (p50 is the headline), the input tokens and the share the server served from
 * its prefix cache, failures, and turn k over turn 1 (of the p50s). Pure: no clock, no I/O.
 */
import { distribution, percentile, requestMetrics } from '../metrics.ts';
import type { RequestTrace } from '../trace.ts';
import { byTurn, ratio, ratiosByTurn, turnPairs, withUsage } from './byTurn.ts';
import type { TurnRatio, TurnRow, TurnsModeRatio, TurnsRun } from './turnsResult.ts';

export type { TurnRatio, TurnRow };

function p50Of(values: readonly number[]): number | null {
  return values.length === 0 ? null : percentile(values, 50);
}

/**
 * Prompt positions the server computed over these turns (input minus what it reused from its prefix cache), from the
 * answered turns that report both; null when none does.
 */
export function computedPositions(traces: readonly RequestTrace[]): number | null {
  const both = withUsage(traces);
  return both.length === 0 ? null : both.reduce((n, x) => n + x.promptTokens! - x.cachedTokens!, 0);
}

/**
 * How many times the server computed the prefix these single-turn requests share (a system prompt of `systemTokens`
 * and the template's tokens around it): what it computed beyond each request's own part, over the shared part's
 * length (ideal: once per Thinker instance). The shared part is the most any request reused (the whole blocks the
 * prompts share), or the system prompt where none reused more. Null without figures.
 */
export function systemComputedTimes(traces: readonly RequestTrace[], systemTokens: number): number | null {
  const both = withUsage(traces);
  if (both.length === 0 || systemTokens <= 0) return null;
  const shared = Math.max(systemTokens, ...both.map((x) => x.cachedTokens!));
  const ownParts = both.reduce((n, x) => n + x.promptTokens! - shared, 0);
  return Math.max(0, computedPositions(both)! - ownParts) / shared;
}

/** Rows by turn index from [conversation][turn] traces (conversations may have fewer turns than others). */
export function turnRows(traces: readonly (readonly RequestTrace[])[]): TurnRow[] {
  return byTurn(traces, (ok, usage, turn1?: TurnRow): TurnRow => {
    const per = ok.map((x) => requestMetrics(x));
    const ttft = distribution(per.map((m) => m.ttftMs));
    const ttfp = distribution(per.map((m) => m.ttfpMs));
    const both = withUsage(ok);
    return {
      ...usage,
      p50_input_tokens: p50Of(ok.filter((x) => x.promptTokens !== undefined).map((x) => x.promptTokens!)),
      p50_cached_tokens: p50Of(both.map((x) => x.cachedTokens!)),
      mean_ttft_ms: ttft.mean,
      p50_ttft_ms: ttft.p50,
      p99_ttft_ms: ttft.p99,
      mean_ttfp_ms: ttfp.mean,
      p50_ttfp_ms: ttfp.p50,
      p99_ttfp_ms: ttfp.p99,
      p50_e2e_ms: distribution(per.map((m) => m.e2eMs)).p50,
      ttft_over_turn1: ratio(ttft.p50, turn1 ? turn1.p50_ttft_ms : ttft.p50),
      ttfp_over_turn1: ratio(ttfp.p50, turn1 ? turn1.p50_ttfp_ms : ttfp.p50),
    };
  });
}

const ttftTtfp = (x: TurnRow, y: TurnRow) => ({
  ttft: ratio(x.p50_ttft_ms, y.p50_ttft_ms),
  ttfp: ratio(x.p50_ttfp_ms, y.p50_ttfp_ms),
});

/** a's p50 over b's at every turn index both measured. */
export function turnRatios(a: readonly TurnRow[], b: readonly TurnRow[]): TurnRatio[] {
  return turnPairs(a, b, ttftTtfp);
}

/** The turn indexes the table shows: all of up to 12, else 1, 2, 5, 10, 20, 50, ... and the last. */
export function displayedTurns(turns: number): number[] {
  if (turns <= 12) return Array.from({ length: turns }, (_, i) => i + 1);
  const shown: number[] = [];
  for (let decade = 1; decade <= turns; decade *= 10)
    for (const step of [1, 2, 5]) if (step * decade <= turns) shown.push(step * decade);
  if (shown.at(-1) !== turns) shown.push(turns);
  return shown;
}

/** `variant`'s p50s over `over`'s by turn index, at every concurrency both ran. */
export function modeRatios(runs: readonly TurnsRun[], variant: string, over: string): TurnsModeRatio[] {
  return ratiosByTurn(runs, variant, over, ttftTtfp);
}
