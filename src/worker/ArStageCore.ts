/**
 * What the autoregressive stages (Thinker, Talker) share: an ArScheduler over a runner that keeps a KV cache per
 * sequence, and the step: schedule -> free preempted KV -> build the batch -> execute -> update -> per-item
 * follow-up. Subclasses say how a scheduled item becomes a runner input and what its output means.
 */
import { ArScheduler, type ScheduledItem, type SchedulerPlan } from '../sched/ArScheduler.ts';
import { DecodeStepCost, NewcomerPrefillCost } from '../sched/DecodeStepCost.ts';
import type { SchedulingPolicy } from '../sched/playback.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { Arrival } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { AddRequest, StageStats } from './messages.ts';
import { ScheduledStageCore } from './ScheduledStageCore.ts';
import type { CoreRequest, StageContext } from './StageCore.ts';

export interface ArRunner<B, O> {
  /** KV bytes one position costs: the scheduler's budget unit (stage kv_cache_bytes / this = positions). */
  readonly kvBytesPerToken: number;
  execute(items: readonly B[]): O[];
  free(seqId: string): void;
}

/**
 * The longest an add is taken to travel from main to a stage beside the step in progress there (ms; a Redis hop
 * between hosts is 0.2-2): how far main's admission time is trusted (NewcomerPrefillCost.added).
 */
const ADD_WAY_MS = 10;

export abstract class ArStageCore<R extends CoreRequest, A, B, O> extends ScheduledStageCore<R, A, ArScheduler> {
  /** Since the process started: prompt positions computed, outputs sampled (ArStats). */
  private promptTokens = 0;
  private generatedTokens = 0;
  /** The CPU a decode step costs by its rows (the process's, over the batch and run): speaking slices' estimate. */
  private readonly decodeCost = new DecodeStepCost();
  /**
   * The CPU a new request's prefill costs (all its pieces, its share of steps of them), and how long after its add its
   * input comes where it comes later (inputFollowsAdd): speaking slices' bound.
   */
  private readonly newcomerCost = new NewcomerPrefillCost();
  private readonly cpuClockMs = this.ctx.cpuClockMs ?? processCpuMs;

  constructor(
    ctx: StageContext,
    private readonly arRunner: ArRunner<B, O>,
    policy: SchedulingPolicy = 'fifo',
    /** ArScheduler's longPrefillsYield (the Thinker's: a clip's prefill in short steps while short prompts wait). */
    longPrefillsYield = false,
  ) {
    const e = ctx.spec.engine;
    super(
      ctx,
      new ArScheduler({
        maxNumSeqs: e.maxNumSeqs,
        maxNumBatchedTokens: e.maxNumBatchedTokens,
        kvBytesPerToken: arRunner.kvBytesPerToken,
        kvBudgetBytes: e.kvCacheBytes,
        policy,
        prefillFirst: e.prefillFirst ?? true,
        seatTurnSteps: e.seatTurnSteps ?? null,
        longPrefillTokenThreshold: e.longPrefillTokenThreshold ?? null,
        longPrefillsYield,
      }),
    );
  }

  override add(msg: AddRequest<A>): void {
    const known = this.requests.has(msg.requestId); // a duplicate add is ignored, and measures nothing
    super.add(msg);
    if (!known && this.inputFollowsAdd() && this.requests.has(msg.requestId))
      this.newcomerCost.added(msg.requestId, Date.now(), msg.admittedAtMs, this.lastStepMs + ADD_WAY_MS);
  }

  override onArrivals(arrivals: readonly Arrival[]): void {
    if (this.inputFollowsAdd())
      for (const a of arrivals)
        if (a.chunk) this.newcomerCost.input(a.requestId, a.chunk.meta.sentAtMs, a.chunk.receivedAtMs);
    super.onArrivals(arrivals);
  }

  /**
   * Whether a request's input comes from upstream after its add (the Talker's prompt rows), not with it (the
   * Thinker's prompt): a step in progress at the add then runs while that input is computed (NewcomerPrefillCost).
   */
  protected inputFollowsAdd(): boolean {
    return false;
  }

  /** Playback scheduling: tell the scheduler each request's deadline before a plan is made (default: none). */
  protected updateDeadlines(): void {}

  protected abstract batchItem(req: R, item: ScheduledItem): B;
  /** Runs after the step for every item whose request is still live. */
  protected abstract afterStep(req: R, item: ScheduledItem, out: O): void;

  protected override freeRunnerState(requestId: string): void {
    this.arRunner.free(requestId);
    this.newcomerCost.removed(requestId);
  }

  step(): boolean {
    this.updateDeadlines();
    const nowMs = Date.now();
    const planned = this.scheduler.schedule(nowMs, this.deferredNow(nowMs));
    this.leftSeats([...planned.yielded, ...planned.preempted]);
    const plan = this.sliced(planned, nowMs);
    const cpu0 = this.cpuClockMs();
    for (const id of plan.preempted) {
      this.arRunner.free(id); // recomputed from position 0 when rescheduled
      this.newcomerCost.removed(id);
    }
    if (plan.items.length === 0) return false;
    // Before the step: an item of a request that has sampled before, taking one position, decodes (it computes its
    // last output's position); any other computes prompt positions (the prompt, its chunks, or a recompute).
    const decodes = plan.items.map((it) => it.numTokens === 1 && this.requests.get(it.requestId)!.numOutputs > 0);
    const firsts = plan.items.filter((it) => this.requests.get(it.requestId)!.numOutputs === 0);
    const started = performance.now();
    const batch = plan.items.map((item) => this.batchItem(this.requests.get(item.requestId)!, item));
    let outputs: O[];
    try {
      outputs = this.timeModel(() => this.arRunner.execute(batch));
    } catch (err) {
      // A failed forward fails the requests in it, not the stage.
      for (const item of plan.items) {
        const req = this.requests.get(item.requestId);
        if (req)
          this.fail(
            req,
            new ChorusError(ErrorCodes.STAGE_FAILED, `${this.ctx.spec.kind} forward failed: ${String(err)}`, {
              cause: err,
            }),
          );
      }
      return true;
    }
    const phase = decodes.every(Boolean) ? 'decode' : 'prefill';
    if (phase === 'decode') this.decodeCost.observe(plan.items.length, this.cpuClockMs() - cpu0);
    const firstIds = firsts.map((it) => it.requestId);
    if (firsts.length > 0)
      this.newcomerCost.prefilled(firstIds, this.cpuClockMs() - cpu0, firsts.length === batch.length);
    this.scheduler.update(plan);
    plan.items.forEach((item, i) => {
      const req = this.requests.get(item.requestId);
      if (req) this.afterStep(req, item, outputs[i]);
    });
    plan.items.forEach((item, i) => {
      if (!decodes[i]) this.promptTokens += item.numTokens;
      if (item.sample) this.generatedTokens++;
    });
    for (const item of firsts) if (item.sample) this.newcomerCost.sampled(item.requestId);
    this.recordStep(
      plan.items.length,
      started,
      () => plan.items.map((it) => [it.requestId, it.numTokens] as const),
      phase,
    );
    return true;
  }

  /** The plan with only the items speaking slices keep (ScheduledStageCore.sliceStep); the rest run next steps. */
  private sliced(plan: SchedulerPlan, nowMs: number): SchedulerPlan {
    const kept = this.sliceStep(
      plan.items.map((it) => it.requestId),
      (rows) => this.decodeCost.estimate(rows),
      this.newcomerCost.estimate(),
      nowMs,
    );
    if (!kept) return plan;
    const items = plan.items.filter((it) => kept.has(it.requestId));
    return { ...plan, items, numScheduledTokens: items.reduce((n, it) => n + it.numTokens, 0) };
  }

  override stats(): StageStats {
    const kvBytesPerToken = this.arRunner.kvBytesPerToken;
    return {
      ...super.stats(),
      ar: {
        promptTokens: this.promptTokens,
        generatedTokens: this.generatedTokens,
        kvUsedBytes: this.scheduler.numKvTokens * kvBytesPerToken,
        kvBudgetBytes: this.ctx.spec.engine.kvCacheBytes,
      },
    };
  }
}

/** The process's CPU time (every thread), in ms. */
function processCpuMs(): number {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
}
