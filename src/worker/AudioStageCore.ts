/**
 * What the stages that turn a request's chunks into the audio a listener plays share (Code2Wav, tts): a
 * GenerationScheduler (one chunk per request a step), and under the playback policy each request's deadline is when
 * its listener's buffer runs dry: the audio sent so far has played out (before the first packet: that packet's
 * deadline). Subclasses admit, take chunks and step; they report each piece of audio sent (audioSent).
 */
import { GenerationScheduler } from '../sched/GenerationScheduler.ts';
import type { AddRequest, PlaybackArgs, PlaybackPlan } from './messages.ts';
import { ScheduledStageCore } from './ScheduledStageCore.ts';
import type { CoreRequest, StageContext } from './StageCore.ts';

export interface AudioRequest extends CoreRequest {
  readonly playback: PlaybackPlan | null;
  /** When its first audio left for main (epoch ms), and how much audio (ms) has left since: the listener's buffer. */
  firstSentAtMs: number | null;
  audioMsSent: number;
}

/** A new request's AudioRequest fields (nothing sent yet); the kind's admit adds its own. */
export function audioRequestOf(msg: AddRequest<PlaybackArgs>): AudioRequest {
  return {
    requestId: msg.requestId,
    sampling: msg.sampling,
    downstream: msg.downstream,
    numOutputs: 0,
    playback: msg.args.playback ?? null,
    firstSentAtMs: null,
    audioMsSent: 0,
  };
}

export abstract class AudioStageCore<R extends AudioRequest, A> extends ScheduledStageCore<R, A, GenerationScheduler> {
  /** `firstChunksFirst`: a request's first chunk goes first, in a step of its own (GenerationScheduler). */
  constructor(ctx: StageContext, firstChunksFirst = false) {
    super(ctx, new GenerationScheduler(ctx.spec.engine.maxNumSeqs, ctx.scheduling, firstChunksFirst));
  }

  /** Every request here makes audio; its first is this stage's first send of it. */
  protected override makesAudio(): boolean {
    return true;
  }

  /** The audio its listener has past the decode of its next chunk (first audio first: FarAhead.ts). */
  protected override leadMs(requestId: string, nowMs: number): number | null {
    const req = this.requests.get(requestId);
    const dryAtMs = req ? this.dryAtMs(req) : null;
    return dryAtMs === null ? null : dryAtMs - nowMs - this.lastStepMs;
  }

  /** When the request's listener runs dry (epoch ms); null without a playback plan. */
  protected dryAtMs(req: R): number | null {
    const pb = req.playback;
    return pb ? (req.firstSentAtMs ?? pb.firstPacketDeadlineMs) + req.audioMsSent : null;
  }

  /** Tells the scheduler the request's deadline (after its first sentence or chunk arrives, and after each send). */
  protected updateDeadline(req: R): void {
    const deadlineMs = this.dryAtMs(req);
    if (deadlineMs !== null) this.scheduler.setDeadline(req.requestId, deadlineMs);
  }

  /** `audioMs` of the request's audio left for main at `sentAtMs` (epoch ms): its listener's buffer grew. */
  protected audioSent(req: R, audioMs: number, sentAtMs: number): void {
    if (req.firstSentAtMs === null) this.heardFirstAudio(req.requestId, sentAtMs); // its first audio: this one
    req.firstSentAtMs ??= sentAtMs;
    req.audioMsSent += audioMs;
    this.updateDeadline(req);
  }
}
