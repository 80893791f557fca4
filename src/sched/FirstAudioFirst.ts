/**
 * First audio first, across stages (`chunk_policy.first_audio_first`, issue 41 item 5). Pure: times are passed in.
 *
 * A newcomer's first audio crosses three stage processes (Thinker, Talker, Code2Wav) that share the cores with each
 * other and with main. Beside sixteen long spoken answers each of them is busy with the answers already speaking, so
 * the newcomer waits in each for the step in progress and then computes on a fraction of a core: 43-59 ms against
 * 14.5 alone (quiet, 2 cores). Those answers do not need the CPU now: their audio is seconds ahead of their
 * listeners. So while a request a stage holds waits for its first audio, the stage holds back the steps of the
 * answers that have been speaking for a while (`settleMs`) and gives the cores to whatever stage is computing the
 * newcomer; its own steps for the newcomer run as usual. It ends with the first audio (the Thinker hears main's
 * `first_audio`; the Talker sees its first chunk go, Code2Wav its audio), and is bounded so that nothing starves:
 *
 * - a waiting request holds the others back for at most `windowMs` after it was added here (a first audio that does
 *   not come, or one that comes late under load, does not stop the others for longer);
 * - at most `maxDeferMs` at a time, and at most half of the time over any longer stretch (time held back is a debt
 *   that time with nothing held back pays off; nothing is held back while it is `maxDeferMs`), so the speaking
 *   answers keep at least half of the stage's time whoever keeps arriving;
 * - an answer whose first audio is younger than `settleMs` is never held back: its listener has little buffered;
 *   nor is one whose stage says its listener is not far enough ahead (`mayHold`: the Talker and Code2Wav model the
 *   listener's buffer, src/sched/playback.ts), so under overload, where every buffer is thin, nothing is held back.
 */

export interface FirstAudioFirstOptions {
  /** How long a request waiting for its first audio holds the others back, at most, from its add (ms). */
  readonly windowMs: number;
  /** The longest stretch held back at once; over longer stretches, at most half of the time (ms). */
  readonly maxDeferMs: number;
  /** How long an answer has been speaking before it may be held back (ms). */
  readonly settleMs: number;
}

/**
 * Audio a listener must have buffered beyond what the stage's next output for it takes, for that answer to be held
 * back (ms): a hold lasts maxDeferMs at most, and under load the steps after it are slow.
 */
export const HOLD_MIN_AHEAD_MS = 750; // a longest hold (maxDeferMs) and half as much again

export const FIRST_AUDIO_FIRST_DEFAULTS: FirstAudioFirstOptions = {
  // Under load a newcomer's way through the three stages takes hundreds of ms (a batch of 16 at 100-150 ms a step):
  // 250 ms ran out before its Talker step (load 12, bench/NOTES.md).
  windowMs: 500,
  maxDeferMs: 500, // a whole window: one newcomer is never cut short; over longer stretches half the time
  settleMs: 1000, // the first chunks are 2-8 frames (160-640 ms of audio): past a second the buffer has grown
};

/** What a step must leave out now, and until when at most (epoch ms). */
export interface Deferral {
  readonly requestIds: ReadonlySet<string>;
  readonly untilMs: number;
}

export class FirstAudioFirst {
  /**
   * Requests waiting for their first audio: when they were added (epoch ms), and whether this stage still holds them.
   * One this stage is done with still waits (a Thinker's short answer is written before its first audio is made):
   * its window goes on holding the others back here, so the stages that make its audio have the cores.
   */
  private readonly waiting = new Map<string, { readonly addedAtMs: number; held: boolean }>();
  /** Requests speaking: when their first audio came (epoch ms). */
  private readonly speaking = new Map<string, number>();
  /** Time held back not yet paid off by time with nothing held back (ms). */
  private debtMs = 0;
  /** The last call's time, and whether it held something back (what the time since was). */
  private lastCallMs: number | null = null;
  private holding = false;

  constructor(private readonly options: FirstAudioFirstOptions = FIRST_AUDIO_FIRST_DEFAULTS) {}

  /** A request that will make audio was added at `nowMs`. */
  added(requestId: string, nowMs: number): void {
    if (!this.speaking.has(requestId)) this.waiting.set(requestId, { addedAtMs: nowMs, held: true });
  }

  /** The request's first audio came (or its audio ended without any) at `atMs`. Unknown ids are ignored. */
  heard(requestId: string, atMs: number): void {
    const w = this.waiting.get(requestId);
    if (!w) return;
    this.waiting.delete(requestId);
    if (w.held) this.speaking.set(requestId, atMs);
  }

  /** The stage is done with the request (finished, failed, aborted); a wait for its first audio runs its window out. */
  removed(requestId: string): void {
    const w = this.waiting.get(requestId);
    if (w) w.held = false;
    this.speaking.delete(requestId);
  }

  /** Whether the request has been speaking for settleMs or more at `nowMs` (an answer that may be held back). */
  settled(requestId: string, nowMs: number): boolean {
    const heardAtMs = this.speaking.get(requestId);
    return heardAtMs !== undefined && nowMs - heardAtMs >= this.options.settleMs;
  }

  /**
   * The speaking answers a step planned at `nowMs` leaves out, or null when it leaves out none. Called before each
   * step: the time since the last call counts as held back when that call held something back.
   */
  deferral(nowMs: number, mayHold: (requestId: string) => boolean = () => true): Deferral | null {
    const { windowMs, maxDeferMs } = this.options;
    const sinceMs = this.lastCallMs === null ? 0 : Math.max(0, nowMs - this.lastCallMs);
    this.debtMs = Math.max(0, this.debtMs + (this.holding ? sinceMs : -sinceMs));
    this.lastCallMs = nowMs;
    let windowEndMs = -Infinity;
    for (const [id, { addedAtMs, held }] of this.waiting) {
      if (addedAtMs + windowMs > nowMs) windowEndMs = Math.max(windowEndMs, addedAtMs + windowMs);
      else if (!held) this.waiting.delete(id); // over, and gone from here; one still here speaks once it is heard
    }
    const held = new Set<string>();
    if (windowEndMs > nowMs && this.debtMs < maxDeferMs)
      for (const id of this.speaking.keys()) if (this.settled(id, nowMs) && mayHold(id)) held.add(id);
    this.holding = held.size > 0;
    if (!this.holding) return null;
    return { requestIds: held, untilMs: Math.min(windowEndMs, nowMs + maxDeferMs - this.debtMs) };
  }
}
