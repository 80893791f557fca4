/**
 * Seat turns for an autoregressive scheduler (ArScheduler.ts, `seatTurnSteps`, issue 41 item 5). Pure: the scheduler
 * passes its requests and its step count. When more requests want a seat than are free, the seats are handed
 * over in turns: once the holders have held theirs a whole turn (that many of their own steps since they were seated
 * or since the last handover), they yield them together, keeping their KV (as a paused one does), to those that have
 * waited longest, newcomers counted a few turns ahead (for them a holder yields after one step, without waiting for
 * the turn). The batch a handover makes then runs unchanged for a turn, so the runner feeds its KV back as is. Without
 * turns, sixteen long spoken answers held all sixteen seats for the whole of their answers and a newcomer's first
 * chunk waited behind them for the 30 s chunk timeout; with them a newcomer is seated at once and long answers share
 * the seats round-robin: with E requests beyond the seats (S) and no arrivals, each waits at most ceil(E / S) turns.
 * Nothing yields while there is a free seat for everyone who wants one.
 *
 * A holder's turn counts the steps it ran, and the steps the stage ran while it had nothing to compute (waiting for
 * its input): not the steps the stage ran others in without it (a newcomer's prefill or first output alone, an answer
 * held back by first audio first or speaking slices). Counted in every step the stage ran, a turn of eight was two
 * steps of the batch while a newcomer's first chunk ran alone (four steps alone, one with the batch), and the batch
 * changed every other time it ran; with speaking slices a group ran one step in five and changed every other time too.
 * Counting only steps it ran, a holder whose input stopped coming would keep its seat from one that wants it for as
 * long as it waits: its idle steps count, so it yields within a turn of steps run like the others, and holders with
 * nothing to compute yield first. A turn is then seatTurnSteps steps of the stage times how often the stage leaves
 * its holders out (speaking slices: the number of groups; first outputs alone: ArScheduler's FIRST_OUTPUT_RUN_STEPS
 * + 1; first audio first: bounded in time, FirstAudioFirst.ts), and at most TURN_MAX_STAGE_STEPS times seatTurnSteps
 * steps.
 */

import type { ArStatus } from './arPlan.ts';

/** A newcomer ranks as if it had waited this many turns longer (its first output goes first). */
const NEWCOMER_LEAD_TURNS = 4;

/**
 * A turn ends after this many times seatTurnSteps steps of the stage, however rarely its holders ran in them.
 * Speaking slices of four on sixteen seats run a holder one step in four (a turn of 4 x seatTurnSteps steps); twice
 * that leaves room for a newcomer's first outputs run alone, while an answer that yielded its seat, whose
 * listener's buffer drains meanwhile, still waits a bounded number of steps for it.
 */
const TURN_MAX_STAGE_STEPS = 8;

/** What seat turns read and write of a scheduler's request. */
export interface SeatHolder {
  readonly requestId: string;
  readonly arrival: number;
  status: ArStatus;
  paused: boolean;
  /** Holds one of the maxNumSeqs batch slots: running and not paused (a resumed request takes one again). */
  seated: boolean;
  numComputedTokens: number;
  numAvailableTokens: number;
  /** Its first output is not out yet (setFirstOutputPending): while it computes, nobody new is admitted. */
  firstOutputPending: boolean;
  /** The step it took its seat at: the longest holders yield first, and a newcomer's seat is one held a step. */
  seatedAtStep: number;
  /**
   * Steps of its turn so far, since it was seated or since the last handover: steps it ran, and steps the stage ran
   * while it had nothing to compute (not those that left it out on purpose).
   */
  turnProgress: number;
  /** The step it last lost or gave up its seat at, or arrived at: who has waited longest for one. */
  unseatedAtStep: number;
}

export class SeatTurns {
  /** The step of the last handover: a turn lasts TURN_MAX_STAGE_STEPS x turnSteps steps after it at most. */
  private turnStartStep = 0;
  /**
   * Steps of the stage the last turn took, from a handover to its holders' turn ending (turnSteps until one has): a
   * newcomer's lead is NEWCOMER_LEAD_TURNS of these. A turn's length in steps depends on how often its holders run
   * (speaking slices: one step in as many as there are groups); a lead of four turns of turnSteps steps fell short of
   * one turn of slices of two, so an answer yielded half a turn ago was seated ahead of a newcomer, and the newcomer's
   * seat took a handover more.
   */
  private turnLengthSteps: number | null = null;

  constructor(
    private readonly turnSteps: number,
    private readonly maxNumSeqs: number,
  ) {}

  /**
   * One step's handover, planned at stage step `steps`. The requests that want a seat (unseated, not paused, with
   * input to compute) go by how long they have waited, a newcomer (never run, or preempted) counted
   * NEWCOMER_LEAD_TURNS turns ahead of its arrival, so its first output does not wait behind long answers taking
   * turns, yet a yielded one is back within a few turns whoever keeps arriving. When they outnumber the free seats,
   * holders yield theirs (KV kept), in one handover at a time:
   * - once holders have held theirs a whole turn (turnProgress: seatTurnSteps of their own or idle steps since they
   *   were seated or since the last handover), those may hand it over, as many as want one (so a turn seats up to
   *   maxNumSeqs of the longest waiting);
   * - between turns, only for newcomers: any holder that has held its seat a step the stage ran (not one about to make
   *   its first output), so a newcomer does not wait for the turn to end.
   * Holders with nothing to compute yield first (they are not using the seat), then the longest holders. A handover
   * starts a turn for every holder: the batch it makes then runs unchanged for a turn (unless a newcomer comes, or a
   * request ends). Handing over one seat whenever one holder was past its turn made every step a new batch with
   * seventeen answers on sixteen seats, and every sequence's KV was repacked each step: the Talker's CPU a row went
   * 0.65-0.82 to 1.5-3.5 ms (bench/NOTES.md, "Seat turns that keep a batch"). `next`: the ones that may take the
   * free seats; `yielded`: those that gave theirs up.
   */
  handOver<R extends SeatHolder>(
    ordered: readonly R[],
    deferred: ReadonlySet<string>,
    steps: number,
  ): { next: Set<R>; yielded: readonly R[] } {
    const turnSteps = this.turnSteps;
    const isNewcomer = (r: SeatHolder) => r.status === 'waiting';
    const leadSteps = NEWCOMER_LEAD_TURNS * (this.turnLengthSteps ?? turnSteps);
    const rank = (r: SeatHolder) => r.unseatedAtStep - (isNewcomer(r) ? leadSteps : 0);
    const wanting = ordered
      .filter((r) => !r.seated && !r.paused && !deferred.has(r.requestId) && r.numAvailableTokens > r.numComputedTokens)
      .sort((a, b) => rank(a) - rank(b) || a.arrival - b.arrival);
    const turnMaxSteps = TURN_MAX_STAGE_STEPS * turnSteps;
    const turnOver = steps - this.turnStartStep >= turnMaxSteps;
    const isDue = (r: SeatHolder) => turnOver || r.turnProgress >= turnSteps;
    const isIdle = (r: SeatHolder) => r.numAvailableTokens === r.numComputedTokens;
    const seated = ordered
      .filter((r) => r.seated && r.status === 'running')
      .sort(
        (a, b) =>
          Number(isDue(b)) - Number(isDue(a)) ||
          Number(isIdle(b)) - Number(isIdle(a)) ||
          a.seatedAtStep - b.seatedAtStep,
      );
    const free = Math.max(0, this.maxNumSeqs - seated.length);
    const short = wanting.length - free; // seats wanted beyond the free ones
    const newcomers = wanting.filter(isNewcomer).length - free;
    // Who may yield: a holder that has run a step, not one about to make its first output (due ones first).
    const movable = seated.filter((r) => steps > r.seatedAtStep && !r.firstOutputPending);
    const due = movable.filter(isDue).length;
    const yielded = movable.slice(0, Math.max(0, Math.min(short, Math.max(due, newcomers))));
    for (const r of yielded) {
      r.seated = false;
      r.unseatedAtStep = steps;
    }
    if (yielded.length > 0) {
      const stepsSinceHandover = steps - this.turnStartStep;
      if (due > 0) this.turnLengthSteps = Math.min(Math.max(stepsSinceHandover, turnSteps), turnMaxSteps);
      this.turnStartStep = steps;
      for (const r of seated) r.turnProgress = 0; // a handover starts a turn for every holder
    }
    return { next: new Set(wanting.slice(0, free + yielded.length)), yielded };
  }

  /**
   * A step ran (`ran`: the requests in it): a holder's turn goes on in its own steps and in the steps it had nothing
   * to compute in; a step that left it out (a newcomer alone, first audio first, speaking slices) is not its turn's.
   */
  stepRan(requests: Iterable<SeatHolder>, ran: ReadonlySet<string>): void {
    for (const r of requests)
      if (r.seated && (ran.has(r.requestId) || r.numAvailableTokens === r.numComputedTokens)) r.turnProgress++;
  }
}
