/**
 * The per-turn limit of `chorus bench --turns`: for each planned turn index (bench/ttfp/turns/turnLimitPlan.ts), the
 * critical path of its first audio packet on the bare runners, over the past it adopted from the prefix cache:
 *
 *   Thinker prefill of the turn's new positions (input - cached) over `cached` positions in KV, samples token 0
 *   + Thinker decode steps until the initial chunk's rows exist
 *   + Talker prefill of its new prompt rows + token 0's row over its cached rows, samples frame 0; + IC - 1 frames
 *   + Code2Wav of the initial chunk.
 *
 * The past of each turn is built once (untimed: runners over those positions) and copied into every timed run
 * before its clock starts (cachedPast.ts); the steps are runLimit.ts's own (firstPacket). Token ids are the bench's
 * seeded words: over dummy weights the time depends on the shapes, not on which ids fill them.
 */
import type { Tokenizer } from '../../src/index.ts';
import { initialChunkFrames, type StageGraph } from '../../src/basics.ts';
import { makePrompts } from '../ttfp/prompts.ts';
import type { TurnLimit, TurnLimitPlan } from '../ttfp/turns/turnLimitPlan.ts';
import { buildPast, freePast } from './cachedPast.ts';
import {
  closeRunners,
  firstPacket,
  graphTokenizer,
  limitSampling,
  medianParts,
  openRunners,
  stageOf,
  thinkerDecodeSteps,
  timeRepeats,
} from './runLimit.ts';

export interface TurnLimitsOptions {
  readonly graph: StageGraph;
  readonly plans: readonly TurnLimitPlan[];
  /** Measured runs per turn (default 5) after `warmup` unmeasured ones (default 1). */
  readonly repeats?: number;
  readonly warmup?: number;
  readonly seed?: number;
  /** The initial chunk; default what the chunk policy picks for a lone request. */
  readonly initialChunkFrames?: number;
  /** Called after each turn's limit (a progress bar). */
  readonly onTurn?: (limit: TurnLimit) => void;
}

export interface TurnLimitsResult {
  readonly initial_chunk_frames: number;
  readonly thinker_decode_steps: number;
  readonly talker_decode_steps: number;
  readonly turns: TurnLimit[];
}

export async function runTurnLimits(o: TurnLimitsOptions): Promise<TurnLimitsResult> {
  const g = o.graph;
  const tokenizer = graphTokenizer(g);
  const sampling = limitSampling(g);
  const thinkerStepTokens = stageOf(g, 'thinker').engine.maxNumBatchedTokens;
  const talkerStepRows = stageOf(g, 'talker').engine.maxNumBatchedTokens;
  const ic = o.initialChunkFrames ?? initialChunkFrames(g.chunkPolicy, 1);
  const runners = await openRunners(g);
  try {
    const turns: TurnLimit[] = [];
    for (const plan of o.plans) {
      const promptIds = turnPromptIds(tokenizer, plan.input_tokens, (o.seed ?? 0) + plan.turn);
      const past = buildPast(runners, {
        name: `turn ${plan.turn}`,
        promptIds,
        thinkerPositions: plan.cached_tokens,
        talkerRows: plan.talker_cached_rows,
        thinkerStepTokens,
        talkerStepRows,
        sampling,
      });
      try {
        const runs = timeRepeats(o.warmup ?? 1, o.repeats ?? 5, (run) =>
          firstPacket(runners, g, [promptIds], ic, sampling, `${run}-turn${plan.turn}`, [past]),
        );
        const limit: TurnLimit = {
          ...plan,
          thinker_new_positions: plan.input_tokens - plan.cached_tokens,
          talker_new_rows: plan.input_tokens - plan.talker_cached_rows,
          median: medianParts(runs),
          min_total_ms: Math.min(...runs.map((r) => r.total_ms)),
        };
        turns.push(limit);
        o.onTurn?.(limit);
      } finally {
        freePast(runners, past);
      }
    }
    return {
      initial_chunk_frames: ic,
      thinker_decode_steps: thinkerDecodeSteps(runners, ic),
      talker_decode_steps: ic - 1,
      turns,
    };
  } finally {
    await closeRunners(runners);
  }
}

/** `count` templated prompt ids (a seeded user message, cut to length): the shapes of a turn's prompt. */
function turnPromptIds(tokenizer: Tokenizer, count: number, seed: number): number[] {
  const [content] = makePrompts({ tokenizer, count: 1, inputLen: count, seed });
  return tokenizer.applyChatTemplate([{ role: 'user', content }]).slice(0, count);
}
