/**
 * How many requests may run in the engine at once, learned from their measured first packets (issue 41: the default
 * pipeline at 4x capacity). The estimate of a newcomer's first audio (src/engine/routing/LiveCost.ts) is a model of a
 * queue that moves under it: under overload it was optimistic exactly when it admitted (tiny-omni at 4x capacity on a
 * quiet machine: admitted first audio p95 2193 ms against the 1000 ms bound, goodput 0.70x its goodput at capacity),
 * and scaling it by what it lately missed by did not hold either (0.71x, p95 2149 ms): the estimates it admitted on
 * were the ones that happened to look low. What sets a newcomer's first packet is how much runs beside it, so this
 * closes the loop on that count instead, as TCP's congestion window and adaptive concurrency limits do (AIMD):
 *
 * - each admitted request's first packet is compared with the bound (RequestQueue.firstPacket): a late one counts
 *   against the limit it was admitted under, and so does a spoken answer whose audio then fell behind its playback
 *   (RequestQueue.underran): in time or not, an answer that underruns is no good answer;
 * - more than LATE_ALLOWED late among the last WINDOW admitted under the current limit (the bound is held at p95,
 *   as the bench judges it) cuts the limit to DECREASE of the most that ran while the last late one waited, and
 *   starts a new generation: first packets of requests admitted before the cut say nothing of the new limit;
 * - a first packet in time from a request admitted at the limit raises it by 1 / limit (one more slot per limit's
 *   worth of requests in time), up to the configured maximum (the server's max_running_requests).
 *
 * It never goes below MIN_RUNNING_LIMIT: a few requests at a time build no queue, and a client that sends a few at a
 * time, however slow each is on this machine, must not be refused by a limit learned from one slow start.
 */

/** The limit never goes below this (or the maximum, if lower). */
export const MIN_RUNNING_LIMIT = 4;
/** A cut leaves this share of what ran when the late request was admitted. */
export const DECREASE = 0.8;
/** First packets of the current generation looked at: its last WINDOW. */
export const WINDOW = 20;
/** Late ones among them that are still within the p95 the bound is held at (1 of 20). */
export const LATE_ALLOWED = 1;

/** One admitted request's outcome, as the limit learns from it. */
export interface FirstPacketSample {
  /**
   * Its first packet came later than its bound after its slot's grant (the engine's part: the line before it is
   * bounded apart), or its audio then fell behind its playback (an underrun: RequestQueue.underran).
   */
  readonly late: boolean;
  /** The limit's generation when it was admitted (RunningLimit.generation). */
  readonly generation: number;
  /** The most requests running while it waited for its first packet, itself included. */
  readonly running: number;
}

export class RunningLimit {
  readonly #max: number;
  readonly #min: number;
  #limit: number;
  #generation = 0;
  /** Whether each of the current generation's last first packets was late, oldest first. */
  readonly #late: boolean[] = [];

  constructor(max: number) {
    this.#max = max;
    this.#min = Math.min(max, MIN_RUNNING_LIMIT);
    this.#limit = max;
  }

  /** Requests that may run now. */
  get limit(): number {
    return Math.max(this.#min, Math.floor(this.#limit));
  }

  /** Bumped by each cut: a request remembers the one it was admitted in. */
  get generation(): number {
    return this.#generation;
  }

  observe(s: FirstPacketSample): void {
    // Admitted before the last cut: its lateness is what the cut answered.
    if (s.generation !== this.#generation) return;
    const { late } = s;
    this.#late.push(late);
    if (this.#late.length > WINDOW) this.#late.shift();
    if (late && this.#late.filter(Boolean).length > LATE_ALLOWED) return this.#cut(s.running);
    if (!late && s.running >= this.limit) this.#limit = Math.min(this.#max, this.#limit + 1 / this.#limit);
  }

  #cut(running: number): void {
    this.#limit = Math.max(this.#min, Math.min(this.#limit, running) * DECREASE);
    this.#generation++;
    this.#late.length = 0;
  }
}
