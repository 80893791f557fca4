/**
 * After the conversations of `chorus bench --turns`: the per-turn limit of the first mode's c=1 run (the config as
 * given; the cache when comparing it against itself switched off), at the turn indexes the table shows (all up to
 * 12, else 1, 2, 5, 10, 20, ... and the last), so a run of hundreds of turns stays a few dozen limits long.
 *
 * Measured once every server is down, so the runners have the machine to themselves, as the single-turn limit
 * (runServeBench.ts) is measured before any server starts.
 */
import { runTurnLimits } from '../../limit/runTurnLimits.ts';
import { stageOf } from '../../limit/runLimit.ts';
import type { Mode } from '../modeRun.ts';
import { ProgressBar } from '../ProgressBar.ts';
import type { ServeBenchOptions } from '../serveBenchOptions.ts';
import { limitRows, planTurnLimits, TTFP_OVER_LIMIT_GOAL, worstTurn, type TurnLimits } from './turnLimitPlan.ts';
import type { TurnsRun } from './turnsResult.ts';
import { displayedTurns } from './turnStats.ts';

export type TurnLimitsOptions = Pick<
  ServeBenchOptions,
  'limit' | 'limitRepeats' | 'seed' | 'initialCodecChunkFrames' | 'progress' | 'log'
> & { readonly turns: number };

/** The limits of `mode`'s c=1 run; null when skipped (--skip-limit), for --url (no config), or without c=1. */
export async function measureTurnLimits(
  o: TurnLimitsOptions,
  mode: Mode,
  runs: readonly TurnsRun[],
): Promise<TurnLimits | null> {
  const run = runs.find((r) => r.variant === mode.variant && r.concurrency === 1);
  if (o.limit === false || !mode.config || !run) return null;
  const graph = mode.config.graph;
  const plans = planTurnLimits(
    run.turns,
    displayedTurns(o.turns),
    stageOf(graph, 'talker').engine.prefixCache?.blockPositions ?? null,
  );
  o.log.info({ turns: plans.map((p) => p.turn) }, 'measuring the per-turn limits');
  const bar = o.progress ? new ProgressBar(o.progress, `limit ${mode.variant} c=1`, plans.length) : null;
  const repeats = o.limitRepeats ?? 5;
  const warmup = 1;
  try {
    const measured = await runTurnLimits({
      graph,
      plans,
      repeats,
      warmup,
      seed: o.seed,
      ...(o.initialCodecChunkFrames !== undefined ? { initialChunkFrames: o.initialCodecChunkFrames } : {}),
      onTurn: () => bar?.tick(true),
    });
    const rows = limitRows(measured.turns, run.turns);
    const worst = worstTurn(rows);
    return {
      variant: mode.variant,
      concurrency: 1,
      initial_chunk_frames: measured.initial_chunk_frames,
      thinker_decode_steps: measured.thinker_decode_steps,
      talker_decode_steps: measured.talker_decode_steps,
      repeats,
      warmup,
      turns: rows,
      worst,
      goal: TTFP_OVER_LIMIT_GOAL,
      met: worst === null ? null : worst.ttfp_over_limit <= TTFP_OVER_LIMIT_GOAL,
    };
  } finally {
    bar?.finish();
  }
}
