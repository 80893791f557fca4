/** One mode of a `chorus bench --turns` run at one concurrency, measured over one or more blocks of conversations. */
import type { LiveMode } from '../modeRun.ts';
import { ProgressBar } from '../ProgressBar.ts';
import type { ModeOptions } from '../serveBenchOptions.ts';
import type { RequestTrace } from '../trace.ts';
import { openConversation } from './openConversation.ts';
import { runConversations } from './runConversations.ts';
import type { TurnsRun } from './turnsResult.ts';
import { computedPositions, systemComputedTimes, turnRows } from './turnStats.ts';

export class TurnsModeRun {
  /** [conversation][turn], by the conversation's index in the concurrency's list. */
  readonly #traces: RequestTrace[][] = [];
  #durationMs = 0;
  #blocks = 0;

  constructor(
    private readonly live: LiveMode,
    private readonly concurrency: number,
  ) {}

  /**
   * Conversations [from, to) of `conversations`; conversation i keeps its seeds wherever it runs. `system`: the
   * instructions every conversation starts with (--system-len), or null.
   */
  async block(
    o: ModeOptions,
    conversations: readonly (readonly string[])[],
    from: number,
    to: number,
    system: string | null = null,
  ): Promise<void> {
    if (to <= from) return;
    const turns = conversations[0].length;
    const part = to - from < conversations.length ? ` [${from}, ${to})` : '';
    const label = `${this.live.mode.variant} c=${this.concurrency}${part}`;
    const bar = o.progress ? new ProgressBar(o.progress, label, (to - from) * turns) : null;
    try {
      const run = await runConversations({
        conversations: conversations.slice(from, to),
        concurrency: this.concurrency,
        outputLen: o.outputLen,
        seed: o.seed + from * turns,
        timeoutMs: o.timeoutMs ?? 300_000,
        chunking: {
          ...(o.initialCodecChunkFrames !== undefined ? { initialCodecChunkFrames: o.initialCodecChunkFrames } : {}),
          ...(o.ttfpTargetMs !== undefined ? { ttfpTargetMs: o.ttfpTargetMs } : {}),
        },
        openConversation: () => openConversation(o.protocol, this.live.target, system),
        onTurnDone: (t) => bar?.tick(t.ok),
      });
      run.traces.forEach((c, i) => (this.#traces[from + i] = [...c]));
      this.#durationMs += run.durationMs;
      this.#blocks++;
    } finally {
      bar?.finish();
    }
  }

  /**
   * The run's row, and its traces in conversation order. `systemTokens`: the system prompt's length (--system-len),
   * counted as computed again per instance for single-turn conversations.
   */
  finish(
    turnsPerConversation: number,
    systemTokens: number | null = null,
  ): { run: TurnsRun; traces: RequestTrace[][] } {
    const { mode } = this.live;
    const traces = this.#traces.filter((c) => c !== undefined);
    const all = traces.flat();
    const completed = all.filter((t) => t.ok).length;
    return {
      run: {
        variant: mode.variant,
        async_chunk: mode.asyncChunk,
        scheduling: mode.scheduling,
        concurrency: this.concurrency,
        conversations: traces.length,
        turns_per_conversation: turnsPerConversation,
        completed,
        failed: all.length - completed,
        duration_s: this.#durationMs / 1000,
        blocks: this.#blocks,
        computed_positions: computedPositions(all),
        system_computed_times:
          systemTokens !== null && turnsPerConversation === 1 ? systemComputedTimes(all, systemTokens) : null,
        turns: turnRows(traces),
      },
      traces,
    };
  }
}
