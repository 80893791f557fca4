/**
 * When a stage warms its model before a newcomer's input comes (StageCore.add). A stage that has not stepped for a
 * while has its weights out of the caches: the other processes' work has taken them, and this guest halts an idle
 * vCPU at once. Beside sixteen long answers paced to their speech, a newcomer's Talker prefill then took 4.1 ms and its
 * first frame 3.6 ms, against 3.0 and 0.9 for the newcomers after it (step traces, bench/NOTES.md, "Warm before the
 * rows come"). The Talker and Code2Wav get a request's add before its input: the Talker waits for the Thinker's
 * prefill, Code2Wav for the Talker's first frames. A step of one dummy position in that wait brings the weights back
 * (the Talker's: 1.9-2.3 ms when cold), and the newcomer's own steps run warm. Once an idle stretch: the adds of a
 * burst warm once, and a stage that steps all the time (a closed loop's back-to-back requests) never warms.
 */

/** A stage idle this long (ms since its last step ended) warms its model when a request is added. */
export const WARM_AFTER_IDLE_MS = 20;

export class IdleWarmth {
  #lastStepEndMs = Number.NEGATIVE_INFINITY;
  #warmedSinceStep = false;

  constructor(private readonly afterIdleMs = WARM_AFTER_IDLE_MS) {}

  /** A step ended at `nowMs` (performance.now()). */
  stepped(nowMs: number): void {
    this.#lastStepEndMs = nowMs;
    this.#warmedSinceStep = false;
  }

  /** Whether an add at `nowMs` warms the model first: idle for afterIdleMs or more, and not warmed since. */
  shouldWarm(nowMs: number): boolean {
    if (this.#warmedSinceStep || nowMs - this.#lastStepEndMs < this.afterIdleMs) return false;
    this.#warmedSinceStep = true;
    return true;
  }
}
