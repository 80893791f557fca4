/**
 * A stage core whose steps a pure scheduler plans (ArStageCore's Thinker and Talker, AudioStageCore's Code2Wav and
 * tts): main's pause and resume go to the scheduler, its queue is the stage's reported queue depth, and a request
 * that ends leaves it (then the runner's state of it, freeRunnerState). With `chunk_policy.first_audio_first`, the
 * requests that make audio are followed from their add to their first audio, and while one waits for it each step
 * leaves out the answers speaking for a while (src/sched/FirstAudioFirst.ts: bounded, so nothing starves). With
 * `chunk_policy.speech_lead_ms`, a stage that says how much speech its output makes (speechMadeMs: the Thinker) also
 * leaves out, while it holds many speaking answers, those far ahead of their speech (src/sched/SpeechLead.ts). With
 * `chunk_policy.speaking_slice` (and first audio first), a step takes at most that many of the answers first audio
 * first may hold back, in turns, so that a newcomer never waits for a long step (src/sched/SpeakingSlices.ts).
 */
import { MAIN } from '../common/graph.ts';
import { FarAhead } from '../sched/FarAhead.ts';
import { FirstAudioFirst } from '../sched/FirstAudioFirst.ts';
import { SpeakingSlices } from '../sched/SpeakingSlices.ts';
import { SpeechLead } from '../sched/SpeechLead.ts';
import type { AddRequest } from './messages.ts';
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
  /** First audio first (chunk_policy.first_audio_first); null when off. */
  private readonly firstAudio: FirstAudioFirst | null;
  /** Speech lead (chunk_policy.speech_lead_ms); null when off. */
  private readonly speechLead: SpeechLead | null;
  /** Speaking slices (chunk_policy.speaking_slice, with first audio first); null when off. */
  private readonly slices: SpeakingSlices | null;
  /** Which answers' listeners are far enough ahead for their steps to wait (first audio first, slices). */
  private readonly ahead = new FarAhead();
  /** Until when the last plan left speaking answers out: the loop wakes then even if nothing arrives. */
  private deferredUntilMs: number | null = null;

  constructor(
    ctx: StageContext,
    protected readonly scheduler: S,
  ) {
    super(ctx);
    const policy = ctx.chunkPolicy;
    this.firstAudio = policy.firstAudioFirst ? new FirstAudioFirst() : null;
    this.speechLead =
      policy.speechLeadMs === null || !this.pacesSpeech()
        ? null
        : new SpeechLead({ leadMs: policy.speechLeadMs, minAnswers: policy.speechLeadMinAnswers });
    this.slices = this.firstAudio && policy.speakingSlice !== null ? new SpeakingSlices(policy.speakingSlice) : null;
  }

  override add(msg: AddRequest<A>): void {
    super.add(msg);
    if (this.firstAudio && this.requests.has(msg.requestId) && this.makesAudio(msg))
      this.firstAudio.added(msg.requestId, Date.now());
  }

  /**
   * Whether the request's answer is spoken, so that main reports its first audio here: by default, when its output
   * goes on to another stage (a Thinker's to the Talker; a text-only answer goes to main alone).
   */
  protected makesAudio(msg: AddRequest<A>): boolean {
    return msg.downstream.some((t) => t.stageId !== MAIN);
  }

  /** The request's first audio is out (main's first_audio, or this stage sent it). */
  protected heardFirstAudio(requestId: string, atMs = Date.now()): void {
    this.firstAudio?.heard(requestId, atMs);
    if (this.requests.has(requestId)) this.speechLead?.started(requestId, atMs);
  }

  /**
   * The answers this step leaves out, once per step: first audio first's and speech lead's; none when both are off
   * or neither holds anything back.
   */
  protected deferredNow(nowMs = Date.now()): ReadonlySet<string> | undefined {
    const deferral = this.firstAudio?.deferral(nowMs, (id) => this.farAhead(id, nowMs)) ?? null;
    const paced = this.speechLead?.plan(nowMs, (id) => this.speechMadeMs(id)) ?? null;
    const until = [deferral?.untilMs, paced?.wakeAtMs].filter((t): t is number => t !== undefined);
    this.deferredUntilMs = until.length > 0 ? Math.min(...until) : null;
    if (!paced) return deferral?.requestIds;
    if (!deferral) return paced.requestIds;
    return new Set([...deferral.requestIds, ...paced.requestIds]);
  }

  /**
   * Which of a planned step's requests (in the plan's order) run in it, or null for all of them: speaking slices
   * run, of the answers first audio first may hold back (speaking for a while, listener far ahead), one fixed group of
   * at most `speaking_slice` a step, in turns, when their step would cost more than a newcomer's prefill here and
   * any wait for its input (`newcomerMs`; SLICE_MIN_STEP_MS until one is measured) by `stepMs` (the model's CPU a
   * decode step of that many rows costs now), as many a slice as a step takes within that cost; the others keep
   * their seats and their input for the next steps. The requests that may not wait run then every other step, in a
   * step of their own, so that no group's batch changes with them.
   */
  protected sliceStep(
    planned: readonly string[],
    stepMs: (rows: number) => number | null,
    newcomerMs: number | null,
    nowMs = Date.now(),
  ): ReadonlySet<string> | null {
    const firstAudio = this.firstAudio;
    if (!this.slices || !firstAudio) return null;
    const mayWait = (id: string) => firstAudio.settled(id, nowMs) && this.farAhead(id, nowMs);
    return this.slices.keep(planned, mayWait, stepMs, newcomerMs);
  }

  /**
   * The requests gave their batch seats up (seat turns) or lost them (preempted): they leave their speaking-slice
   * groups, so those seated in their place fill the room (SpeakingSlices.ts).
   */
  protected leftSeats(requestIds: readonly string[]): void {
    for (const id of requestIds) this.slices?.removed(id);
  }

  /** Whether the stage's output leads its answers' speech (speechMadeMs says by how much): it paces them. */
  protected pacesSpeech(): boolean {
    return false;
  }

  /** The speech (ms) the request's output here makes so far, or null when it cannot tell: not paced. */
  protected speechMadeMs(_requestId: string): number | null {
    return null;
  }

  /**
   * The audio (ms) the answer's listener has buffered beyond what its next output here takes, or null when it cannot
   * tell (never far ahead); by default Infinity (a Thinker's text runs far ahead of the speech made from it).
   */
  protected leadMs(_requestId: string, _nowMs: number): number | null {
    return Number.POSITIVE_INFINITY;
  }

  /** Whether the answer's steps here may wait: its lead is past the floor, with hysteresis (src/sched/FarAhead.ts). */
  private farAhead(requestId: string, nowMs: number): boolean {
    return this.ahead.test(requestId, this.leadMs(requestId, nowMs));
  }

  override nextWakeAtMs(): number | null {
    return this.deferredUntilMs;
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
    this.firstAudio?.removed(req.requestId);
    this.speechLead?.removed(req.requestId);
    this.slices?.removed(req.requestId);
    this.ahead.removed(req.requestId);
    this.scheduler.remove(req.requestId);
    this.freeRunnerState(req.requestId);
  }

  /** Frees what the runner keeps for the request (a KV cache, a vocoder's state); default: nothing. */
  protected freeRunnerState(_requestId: string): void {}
}
