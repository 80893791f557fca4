/**
 * Speech lead (`chunk_policy.speech_lead_ms`, issue 41 item 5). Pure: times are passed in.
 *
 * A spoken answer's text (a Thinker's tokens) is made far faster than it is spoken: left alone, a Thinker beside
 * sixteen long answers runs a batch of sixteen step after step until their texts end, minutes ahead of their
 * listeners, and the Talker and Code2Wav run as fast behind it. A newcomer then always finds every stage in a step
 * (quiet, 2 cores: first audio 1.6-4.8x its time alone), however its own steps are ordered (FirstAudioFirst.ts).
 * Its listeners need none of that work yet. So, while the stage holds many speaking answers, an answer whose output
 * leads its speech by `leadMs` or more waits: it is stepped again when its lead falls below `leadMs`, and then until
 * it leads by `leadMs` and a quarter more, with every other answer within that band (so answers catch up together,
 * in full batches, instead of one at a time). The stages are then idle most of the time a newcomer may come, and
 * the same work is done, spread over the answers' speech.
 *
 * The lead is the speech the output so far makes (the stage says how much: a Thinker's tokens times the audio each
 * voices) less the speech played since the answer's first audio: its listener's buffer, plus what the later stages
 * have still to make of it. A few answers are never paced (`minAnswers`): their steps are short, and paced they would
 * only end later (a lone long answer's text, or the c=10 bench's answers, would come at the speed of speech).
 */

export interface SpeechLeadOptions {
  /** An answer whose output leads its speech by this much or more waits (ms). */
  readonly leadMs: number;
  /** Answers are paced only while the stage holds at least this many speaking ones. */
  readonly minAnswers: number;
}

/** Once an answer is stepped again, it is stepped until its lead is this share of leadMs above leadMs. */
export const CATCH_UP_SHARE = 0.25;

/** What a step must leave out, and when the first of them is due again (epoch ms). */
export interface PacePlan {
  readonly requestIds: ReadonlySet<string>;
  readonly wakeAtMs: number;
}

export class SpeechLead {
  /** Speaking answers: when their first audio came (epoch ms), and whether they are catching up. */
  private readonly speaking = new Map<string, { readonly startedAtMs: number; catchingUp: boolean }>();

  constructor(private readonly options: SpeechLeadOptions) {}

  /** The request's first audio came at `atMs` (again: ignored). */
  started(requestId: string, atMs: number): void {
    if (!this.speaking.has(requestId)) this.speaking.set(requestId, { startedAtMs: atMs, catchingUp: true });
  }

  /** The stage is done with the request; unknown ids are ignored. */
  removed(requestId: string): void {
    this.speaking.delete(requestId);
  }

  /**
   * The answers a step planned at `nowMs` leaves out, or null for none. `speechMs(id)`: the speech the request's
   * output so far makes (ms); null leaves it unpaced.
   */
  plan(nowMs: number, speechMs: (requestId: string) => number | null): PacePlan | null {
    const { leadMs, minAnswers } = this.options;
    if (this.speaking.size < minAnswers) return null;
    const highMs = leadMs * (1 + CATCH_UP_SHARE);
    const leads = new Map<string, number>();
    let due = false;
    for (const [id, s] of this.speaking) {
      const made = speechMs(id);
      if (made === null) continue;
      const lead = made - (nowMs - s.startedAtMs);
      leads.set(id, lead);
      if (lead >= highMs) s.catchingUp = false;
      due ||= lead <= leadMs;
    }
    const held = new Set<string>();
    let wakeAtMs = Infinity;
    for (const [id, lead] of leads) {
      const s = this.speaking.get(id)!;
      if (due && lead < highMs) s.catchingUp = true;
      if (s.catchingUp) continue;
      held.add(id);
      wakeAtMs = Math.min(wakeAtMs, nowMs + lead - leadMs);
    }
    return held.size === 0 ? null : { requestIds: held, wakeAtMs };
  }
}
