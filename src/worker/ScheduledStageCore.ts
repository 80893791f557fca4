/**
 * A stage core whose steps a pure scheduler plans (ArStageCore's Thinker and Talker, AudioStageCore's Code2Wav and
 * tts): main's pause and resume go to the scheduler, its queue is the stage's reported queue depth, and a request
 * that ends leaves it (then the runner's state of it, freeRunnerState).
 */
import { StageCore, type CoreRequest, type StageContext } from './StageCore.ts';

/** What a core asks of its scheduler beyond the plan. */
export interface RequestScheduler {
  /** Holds the request back (its client is not reading): it takes no batch position until resumed. */
  pause(requestId: string): void;
  resume(requestId: string): void;
  /** Forgets the request (finished, failed or aborted); an unknown id is ignored. */
  remove(requestId: string): void;
  /** Requests waiting for a step: the queue depth the stats report (load-aware chunking reads it). */
  readonly queueDepth: number;
}

export abstract class ScheduledStageCore<R extends CoreRequest, A, S extends RequestScheduler> extends StageCore<R, A> {
  constructor(
    ctx: StageContext,
    protected readonly scheduler: S,
  ) {
    super(ctx);
  }

  pause(requestId: string): void {
    this.scheduler.pause(requestId);
  }

  resume(requestId: string): void {
    this.scheduler.resume(requestId);
  }

  protected queueDepth(): number {
    return this.scheduler.queueDepth;
  }

  protected freeState(req: R): void {
    this.scheduler.remove(req.requestId);
    this.freeRunnerState(req.requestId);
  }

  /** Frees what the runner keeps for the request (a KV cache, a vocoder's state); default: nothing. */
  protected freeRunnerState(_requestId: string): void {}
}
