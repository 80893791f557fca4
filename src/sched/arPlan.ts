/**
 * What an autoregressive stage's scheduler (ArScheduler.ts) is configured with and what each of its steps plans: the
 * contract its stage cores and the routing estimate read, apart from how the plan is made.
 */
import type { SchedulingPolicy } from './playback.ts';

export type ArStatus = 'waiting' | 'running' | 'waiting_for_chunk' | 'paused' | 'finished';

export interface ArSchedulerOptions {
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  /** KV bytes one position costs (all layers, key + value). */
  readonly kvBytesPerToken: number;
  /** Total KV budget; a step that would exceed it preempts the newest running requests (recompute). */
  readonly kvBudgetBytes: number;
  /** Default fifo. */
  readonly policy?: SchedulingPolicy;
  /** Newcomers' whole prefills run in a step of their own, ahead of the decodes (default true; ArScheduler.ts). */
  readonly prefillFirst?: boolean;
  /** Seat turns (ArScheduler.ts): steps a request holds its seat before yielding it to one waiting; null: off. */
  readonly seatTurnSteps?: number | null;
  /**
   * Positions one request computes in a step at most (vLLM's long_prefill_token_threshold); null or absent: the step's
   * budget. A long prefill (a clip's rows) then takes several short steps, and the requests beside it (a text's
   * prefill, the decodes) wait for one short step instead of a step of the whole budget.
   */
  readonly longPrefillTokenThreshold?: number | null;
  /**
   * Long prefills yield to short prompts (the Thinker's; ArScheduler.ts): while a newcomer whose whole prompt fits a
   * step waits for its first output, a running request whose prompt does not fit one computes at most a seat's share
   * of the step (budget / seats). Default false.
   */
  readonly longPrefillsYield?: boolean;
}

export interface ScheduledItem {
  readonly requestId: string;
  /** First position computed this step (== numComputedTokens before the step). */
  readonly startPosition: number;
  readonly numTokens: number;
  /** The step reaches the last known position, so the runner samples the next output there. */
  readonly sample: boolean;
  /** The first piece of a split first step (ArScheduler.splitFirstStep): the rest of the prompt computes next. */
  readonly splitFirst?: boolean;
}

export interface SchedulerPlan {
  readonly items: readonly ScheduledItem[];
  /** Requests whose KV was dropped this step; they restart from position 0 when scheduled again. */
  readonly preempted: readonly string[];
  /** Requests that gave their seats up for this step (seat turns): they keep their KV and are seated again later. */
  readonly yielded: readonly string[];
  readonly numScheduledTokens: number;
}
