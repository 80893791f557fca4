/**
 * `chorus bench --turns N`: conversations of N turns at each concurrency, over Realtime (a session per
 * conversation) or chat completions (the history resent), through the real front end; per turn index TTFT, TTFP,
 * input and cached tokens, failures, and turn k over turn 1. With two modes (--compare-config, --compare-sync)
 * both servers run at once and each concurrency's conversations go in halves A B B A, as in the TTFP bench, and
 * the report adds the first mode's p50s over the second's per turn index.
 *
 * Then, with every server down, the per-turn limit of the first mode's c=1 run (measureTurnLimits.ts): each shown
 * turn's new positions over a cached past of its length, on the bare runners (--skip-limit: none). The single-turn
 * limit says nothing of a turn over a long history.
 */
import { finished, resultHeader } from '../results.ts';
import { loadOptions, openMode, overModes, sortRuns, warmUp, type Mode } from '../modeRun.ts';
import { makePrompts } from '../prompts.ts';
import { benchTokenizer, planModes } from '../planModes.ts';
import type { ModeOptions, ServeBenchOptions } from '../serveBenchOptions.ts';
import type { RequestTrace } from '../trace.ts';
import { makeConversations } from './conversations.ts';
import { measureTurnLimits } from './measureTurnLimits.ts';
import { TurnsModeRun } from './TurnsModeRun.ts';
import type { TurnsResult, TurnsRun } from './turnsResult.ts';
import { modeRatios } from './turnStats.ts';

export interface TurnsBenchOptions
  extends
    ModeOptions,
    Pick<
      ServeBenchOptions,
      | 'concurrency'
      | 'inputLen'
      | 'warmup'
      | 'compareSync'
      | 'compareScheduling'
      | 'compareConfig'
      | 'comparePrefixCache'
      | 'compareRouting'
      | 'limit'
      | 'limitRepeats'
      | 'command'
    > {
  /** Turns per conversation. */
  readonly turns: number;
  /**
   * Conversations per concurrency; default twice the concurrency, so that each half of an A B B A comparison still
   * keeps `concurrency` conversations in flight.
   */
  readonly conversations?: number;
  /**
   * Tokens of a system prompt every conversation starts with (a system message; a Realtime session's instructions),
   * the same for all: what a shared prefix costs across requests and instances.
   */
  readonly systemLen?: number;
  /** Called after each run with its row and its traces, [conversation][turn] (the CLI writes them to turns.json). */
  readonly onRun?: (run: TurnsRun, traces: readonly (readonly RequestTrace[])[]) => void;
}

/** Conversations at the i-th concurrency are drawn from seed + (i + 1) * this (warm-up prompts: another stream). */
const CONVERSATION_SEED_STRIDE = 0x10001;
/** The system prompt's words: a stream of their own. */
const SYSTEM_SEED = 0x5157;

export async function runTurnsBench(o: TurnsBenchOptions): Promise<TurnsResult> {
  const modes = await planModes(o);
  const tokenizer = await benchTokenizer(o, modes);
  const warmupPrompts = makePrompts({ tokenizer, count: o.warmup, inputLen: o.inputLen, seed: o.seed + 0x5eed });
  // A system prompt of its own per concurrency, as its conversations: c=8 must not find c=1's in the cache.
  const systemAt = (index: number): string | null =>
    o.systemLen === undefined
      ? null
      : makePrompts({ tokenizer, count: 1, inputLen: o.systemLen, seed: o.seed + SYSTEM_SEED + index })[0];
  // Each concurrency has conversations of its own: a server with a prefix cache must not answer c=4's turns from
  // what c=1's conversations left in it. Every mode gets the same ones (and the same seeds).
  const conversationsAt = (index: number): string[][] =>
    makeConversations({
      tokenizer,
      conversations: o.conversations ?? 2 * o.concurrency[index],
      turns: o.turns,
      inputLen: o.inputLen,
      seed: o.seed + (index + 1) * CONVERSATION_SEED_STRIDE,
    });
  const result: TurnsResult = {
    tool: 'chorus bench --turns',
    ...resultHeader(o, modes),
    options: {
      protocol: o.protocol,
      concurrency: o.concurrency,
      turns: o.turns,
      conversations: o.conversations ?? null,
      input_len: o.inputLen,
      system_len: o.systemLen ?? null,
      ...loadOptions(o, modes),
    },
    runs: [],
    ratios: [],
    turn_limits: null,
  };
  const open = async (mode: Mode) => {
    const live = await openMode(o, mode, result);
    await warmUp(o, live, warmupPrompts);
    return live;
  };
  const conversations = o.concurrency.map((_, index) => conversationsAt(index));
  await overModes(
    modes,
    o.concurrency,
    open,
    (index) => conversations[index].length,
    (live, concurrency, index) => {
      const run = new TurnsModeRun(live, concurrency);
      return {
        block: (from, to) => run.block(o, conversations[index], from, to, systemAt(index)),
        finish: () => {
          const { run: row, traces } = run.finish(o.turns, o.systemLen ?? null);
          result.runs.push(row);
          o.onRun?.(row, traces);
        },
      };
    },
  );
  sortRuns(result.runs, modes, o.concurrency);
  result.turn_limits = await measureTurnLimits(o, modes[0], result.runs);
  if (modes.length === 2) result.ratios = modeRatios(result.runs, modes[0].variant, modes[1].variant);
  return finished(result);
}
