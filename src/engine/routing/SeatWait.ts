/**
 * How long a request admitted now would wait for a batch seat (issue 41 item 5). An autoregressive stage (Thinker,
 * Talker) decodes at most max_num_seqs requests together (src/sched/ArScheduler.ts); a request beyond them waits in
 * the stage until one finishes. Admission that counted only its own estimate of prefill queues let sixteen long
 * spoken answers hold every seat while newcomers were admitted behind them and ended CHORUS_ERR_CHUNK_TIMEOUT (500)
 * after 30 s. This counts the seats: what each instance holds (main's in-flight set, instantaneous: no stats lag),
 * and when each holder is expected to leave, so the admission estimate (Router.estimate) adds the wait and a request
 * that cannot get a seat within its bound is refused at once (429 + Retry-After) instead.
 *
 * When a holder leaves: requests lately held their stages for `holdMs` (moving average of admission to release), so
 * a young holder is expected to leave after the rest of that; one already older than half of it is taken to be a
 * long answer and expected to run about as long again as it has (a long answer's length is not known in advance;
 * its age is the evidence). Without this, the first long answers, younger than any hold learned from short ones,
 * would look about to leave.
 *
 * With seat turns (engine.seat_turn_steps, src/sched/ArScheduler.ts) holders yield their seats in turn, seats
 * going to whoever waited longest: the requests beyond the seats are seated `seats` per turn, a turn being
 * seat_turn_steps of the instance's last step time. The wait is the sooner of that and the holders leaving.
 */
import type { StageSpec } from '../../common/graph.ts';
import { descriptorOf } from '../../../stages/registry.ts';
import type { InstanceView } from '../pool/StageInstance.ts';

/** Weight of a new hold sample (exponential moving average), as the router's rates. */
const HOLD_SMOOTHING = 0.3;

/**
 * The wait for a seat when `seats` are all held and the holders leave after `remainingMs` each (any order): the
 * requests already waiting go first, so a newcomer gets the seat freed by the (waiting + 1)-th holder to leave.
 * `holders` counts every request in the stage (seated or waiting for a seat); 0 with a seat free.
 */
export function seatWaitMs(seats: number, remainingMs: readonly number[]): number {
  const ahead = remainingMs.length - seats; // requests waiting for a seat before this one
  if (ahead < 0) return 0;
  const sorted = [...remainingMs].sort((a, b) => a - b);
  return sorted[Math.min(ahead, sorted.length - 1)] ?? 0;
}

/**
 * The wait for a seat when `holders` (seated or waiting) share `seats` in turns of `turnMs`: the requests beyond
 * the seats are seated `seats` per turn, the newcomer after them.
 */
export function turnWaitMs(seats: number, holders: number, turnMs: number): number {
  if (holders < seats) return 0;
  return Math.ceil((holders - seats + 1) / seats) * turnMs;
}

/** How long a holder of age `ageMs` is expected to hold on, requests lately holding for `holdMs` (null: unknown). */
export function remainingHoldMs(ageMs: number, holdMs: number | null): number {
  return Math.max((holdMs ?? 0) - ageMs, ageMs);
}

export class SeatWait {
  readonly #since = new Map<string, number>();
  #holdMs: number | null = null;

  /** A request was routed at `atMs` (a replay keeps its first admission: its age is its client's wait). */
  admitted(requestId: string, atMs: number): void {
    if (!this.#since.has(requestId)) this.#since.set(requestId, atMs);
  }

  /** The request ended at `atMs`: learn how long requests hold their seats. */
  released(requestId: string, atMs: number): void {
    const since = this.#since.get(requestId);
    if (since === undefined) return;
    this.#since.delete(requestId);
    const heldMs = Math.max(0, atMs - since);
    this.#holdMs = this.#holdMs === null ? heldMs : this.#holdMs + HOLD_SMOOTHING * (heldMs - this.#holdMs);
  }

  /**
   * The wait for a seat at each autoregressive stage among `stages` on its least-waiting ready instance; the longest
   * of them (a request needs a seat at each in turn; taking the longest, not the sum, since they free in parallel).
   * `seated`: whether an in-flight id holds (or waits for) a seat; a paused request holds none.
   */
  waitMs(
    instances: Iterable<InstanceView>,
    stages: readonly StageSpec[] | 'all',
    nowMs: number,
    seated: (id: string) => boolean = () => true,
  ): number {
    const best = new Map<StageSpec, number>();
    for (const view of instances) {
      if (view.status !== 'ready' || (stages !== 'all' && !stages.includes(view.spec))) continue;
      if (descriptorOf(view.spec.kind).workerType !== 'ar') continue; // no seats: a chunk batch per step
      const waitMs = this.#instanceWaitMs(view, nowMs, seated);
      best.set(view.spec, Math.min(best.get(view.spec) ?? Infinity, waitMs));
    }
    return Math.max(0, ...best.values());
  }

  #instanceWaitMs(view: InstanceView, nowMs: number, seated: (id: string) => boolean): number {
    const seats = view.spec.engine.maxNumSeqs;
    // A paused request (its client stopped reading) gives its seat up (ArScheduler.pause): it holds none.
    const holders = [...view.inFlight].filter(seated);
    if (holders.length < seats) return 0;
    const remaining = holders.map((id) => remainingHoldMs(nowMs - (this.#since.get(id) ?? nowMs), this.#holdMs));
    const untilLeaving = seatWaitMs(seats, remaining);
    const turnSteps = view.spec.engine.seatTurnSteps;
    if (turnSteps == null || !view.stats) return untilLeaving;
    return Math.min(untilLeaving, turnWaitMs(seats, holders.length, turnSteps * view.stats.stepMs));
  }
}
