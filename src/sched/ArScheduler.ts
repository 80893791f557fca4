/**
 * Continuous-batching scheduler for autoregressive stages (Thinker, Talker). Pure: no I/O, no timers, no model.
 * The stage core tells it how many input positions of each request are known (`numAvailableTokens`: prompt +
 * fed-back samples for the Thinker; arrived conditioning rows for the Talker) and whether more can still come;
 * the scheduler decides which requests compute how many positions this step, within the token budget, the
 * sequence limit and the KV byte budget.
 *
 * A request whose next input has not arrived is WAITING_FOR_CHUNK: it is skipped, never blocking the others.
 *
 * Slots: at most maxNumSeqs requests hold a batch slot, and only they (and those admitted into free slots) are in a
 * step. A paused request (its client stopped reading) gives its slot up at once and keeps its KV, so a few stalled
 * clients cannot stop everyone else from being admitted (issue 33: sixteen paused readers held all sixteen Talker
 * slots and other clients' first audio waited for the 30 s chunk timeout). When KV is short, paused requests' KV is
 * preempted first (recomputed from position 0 when they run again). A resumed request takes a slot again when one is
 * free, ahead of requests that arrived after it: it waits a step rather than overfill the batch.
 *
 * Seat turns (`seatTurnSteps`, issue 41 item 5): when more requests want a seat than are free, the seats are handed
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
 * its holders out (speaking slices: the number of groups; first outputs alone: FIRST_OUTPUT_RUN_STEPS + 1; first audio
 * first: bounded in time, FirstAudioFirst.ts), and at most TURN_MAX_STAGE_STEPS times seatTurnSteps steps.
 *
 * Policy fifo: running requests oldest first, then waiting ones in arrival order. Policy playback (playback.ts):
 * both by deadline, least slack first.
 *
 * Prefill first (`prefillFirst`, on by default): a step that admits requests whose whole prompt fits it, and that
 * samples their first output, runs them alone, ahead of the running requests' decodes. The runner computes a step's
 * items group by group, one after another (items with the same position count batch together), so the decodes
 * would wait for those prefills inside the mixed step anyway; alone, the newcomers' first tokens do not wait for
 * the decodes. Work is the same; a newcomer's TTFT loses one decode run (a cached conversation turn, whose prefill
 * is short, gains most). The next step always includes the decodes, so arrivals cannot starve them.
 *
 * First outputs first (with prefill first, issue 41 item 5): a step that would batch requests still making their first
 * output (setFirstOutputPending: a Talker's first chunk) with requests past theirs runs the first ones alone, up to
 * FIRST_OUTPUT_RUN_STEPS steps in a row. Sixteen long spoken answers decoding in the Talker made a newcomer's first
 * chunk wait on a batch of 17 for each of its frames (25 steps of 35-150 ms at load 15-31: first audio 1.1-7.6 s
 * against 15 ms alone); alone, each of its frames costs a step of one, and the batch of the others stays the same
 * batch (its KV fed back as is). The long answers lose those few short steps, against seconds of audio buffered.
 *
 * Long prefills yield (`longPrefillsYield`, the Thinker's): a prompt longer than a step computes a seat's share of
 * it while a short prompt waits for its first output (longPrefillYield.ts).
 */
import { byDeadline } from './playback.ts';

/** Seat turns: a newcomer ranks as if it had waited this many turns longer (its first output goes first). */
const NEWCOMER_LEAD_TURNS = 4;

/**
 * Seat turns: a turn ends after this many times seatTurnSteps steps of the stage, however rarely its holders ran in
 * them. Speaking slices of four on sixteen seats run a holder one step in four (a turn of 4 x seatTurnSteps steps);
 * twice that leaves room for a newcomer's first outputs run alone, while an answer that yielded its seat, whose
 * listener's buffer drains meanwhile, still waits a bounded number of steps for it.
 */
const TURN_MAX_STAGE_STEPS = 8;

/**
 * First outputs first: at most this many steps in a row run without the requests past their first output. A first
 * chunk sized for a newcomer alone is 2 frames (the prefill and one decode: chunkPolicy.ts), for up to 8 newcomers 4;
 * a steady stream of newcomers still leaves the others a step in every FIRST_OUTPUT_RUN_STEPS + 1.
 */
const FIRST_OUTPUT_RUN_STEPS = 4;

const NONE: ReadonlySet<string> = new Set();

import type { ArSchedulerOptions, ArStatus, ScheduledItem, SchedulerPlan } from './arPlan.ts';
import { longPrefillCapOf, yieldShareOf } from './longPrefillYield.ts';
export type { ArSchedulerOptions, ArStatus, ScheduledItem, SchedulerPlan } from './arPlan.ts';

interface ArRequest {
  readonly requestId: string;
  readonly arrival: number;
  status: ArStatus;
  paused: boolean;
  /** Holds one of the maxNumSeqs batch slots: running and not paused (a resumed request takes one again). */
  seated: boolean;
  numComputedTokens: number;
  numAvailableTokens: number;
  /** Whether reaching numAvailableTokens samples an output (false: the known positions are context only). */
  sampleAtEnd: boolean;
  /** Epoch ms its next output is due (playback policy); null: none. */
  deadlineMs: number | null;
  /** Its first output is not out yet (setFirstOutputPending): while it computes, nobody new is admitted. */
  firstOutputPending: boolean;
  /** The step it took its seat at: the longest holders yield first, and a newcomer's seat is one held a step. */
  seatedAtStep: number;
  /**
   * Seat turns: steps of its turn so far, since it was seated or since the last handover: steps it ran, and steps the
   * stage ran while it had nothing to compute (not those that left it out on purpose).
   */
  turnProgress: number;
  /** The step it last lost or gave up its seat at, or arrived at: who has waited longest for one (seat turns). */
  unseatedAtStep: number;
}

export class ArScheduler {
  private readonly requests = new Map<string, ArRequest>();
  private arrivals = 0;
  /** Plans in a row that ran newcomers or first outputs alone, without the other running requests. */
  private aloneRun = 0;
  /**
   * Steps run so far (plans with items, update()). Plans are made on every wake-up, most of them empty while the
   * requests wait for their input (a Talker for its rows); seat turns count steps run, never plans.
   */
  private steps = 0;
  /** The step of the last handover: a turn lasts TURN_MAX_STAGE_STEPS x seatTurnSteps steps after it at most. */
  private turnStartStep = 0;
  /**
   * Steps of the stage the last turn took, from a handover to its holders' turn ending (seatTurnSteps until one has):
   * a newcomer's lead is NEWCOMER_LEAD_TURNS of these. A turn's length in steps depends on how often its holders run
   * (speaking slices: one step in as many as there are groups); a lead of four turns of seatTurnSteps steps fell short
   * of one turn of slices of two, so an answer yielded half a turn ago was seated ahead of a newcomer, and the
   * newcomer's seat took a handover more.
   */
  private turnLengthSteps: number | null = null;

  /** Positions one request may compute in a step (longPrefillTokenThreshold, else no cap of its own). */
  private readonly perRequestTokens: number;
  /** Long prefills yield: a seat's share of the step, what one computes while short prompts wait (null: off). */
  private readonly yieldShare: number | null;

  constructor(private readonly options: ArSchedulerOptions) {
    if (options.maxNumSeqs < 1 || options.maxNumBatchedTokens < 1) {
      throw new RangeError('maxNumSeqs and maxNumBatchedTokens must be >= 1');
    }
    const threshold = options.longPrefillTokenThreshold ?? null;
    if (threshold !== null && threshold < 1) throw new RangeError('longPrefillTokenThreshold must be >= 1');
    this.perRequestTokens = threshold ?? Number.POSITIVE_INFINITY;
    this.yieldShare = yieldShareOf(options.longPrefillsYield === true, options.maxNumBatchedTokens, options.maxNumSeqs);
  }

  add(requestId: string, numAvailableTokens: number): void {
    if (this.requests.has(requestId)) throw new Error(`request ${requestId} is already scheduled`);
    this.requests.set(requestId, {
      requestId,
      arrival: this.arrivals++,
      status: 'waiting',
      paused: false,
      seated: false,
      numComputedTokens: 0,
      numAvailableTokens,
      sampleAtEnd: true,
      deadlineMs: null,
      firstOutputPending: false,
      seatedAtStep: 0,
      turnProgress: 0,
      unseatedAtStep: this.steps,
    });
  }

  has(requestId: string): boolean {
    return this.requests.has(requestId);
  }

  /**
   * More input is known (a chunk arrived, or a sampled token is fed back). `sampleAtEnd: false` lets the known
   * positions be computed ahead as context without sampling at the last one (the Talker's prompt rows, before
   * the row that conditions its first frame has arrived).
   */
  setAvailable(requestId: string, numAvailableTokens: number, sampleAtEnd = true): void {
    const r = this.get(requestId);
    if (numAvailableTokens < r.numComputedTokens)
      throw new Error(`available positions cannot go below computed ones (${requestId})`);
    r.numAvailableTokens = numAvailableTokens;
    r.sampleAtEnd = sampleAtEnd;
  }

  /**
   * Whether the request still waits for its first output (a Talker's first chunk). A step that computes such a
   * request admits no one new: a prompt admitted beside it would make its step a prefill, and its first output
   * would wait for that prefill.
   */
  setFirstOutputPending(requestId: string, pending: boolean): void {
    this.get(requestId).firstOutputPending = pending;
  }

  /** Playback policy: when the request's next output is due (epoch ms); null: no deadline (served last). */
  setDeadline(requestId: string, deadlineMs: number | null): void {
    this.get(requestId).deadlineMs = deadlineMs;
  }

  /**
   * Positions [0, numComputedTokens) were computed before the request ran (it adopted a cached prefix's
   * KV): it starts there. Only for a request that has not run yet.
   */
  startAt(requestId: string, numComputedTokens: number): void {
    const r = this.get(requestId);
    if (r.status !== 'waiting' || r.numComputedTokens !== 0)
      throw new Error(`request ${requestId} has run already: it cannot start elsewhere`);
    r.numComputedTokens = numComputedTokens;
    r.numAvailableTokens = Math.max(r.numAvailableTokens, numComputedTokens);
  }

  numComputed(requestId: string): number {
    return this.get(requestId).numComputedTokens;
  }

  status(requestId: string): ArStatus | undefined {
    const r = this.requests.get(requestId);
    if (!r) return undefined;
    if (r.paused) return 'paused';
    if (r.status === 'running' && r.numAvailableTokens === r.numComputedTokens) return 'waiting_for_chunk';
    return r.status;
  }

  /** Holds the request back: it keeps its KV (unless KV runs short) but gives its batch slot up at once. */
  pause(requestId: string): void {
    const r = this.requests.get(requestId);
    if (!r) return;
    r.paused = true;
    if (r.seated) r.unseatedAtStep = this.steps;
    r.seated = false;
  }

  /** Lets the request run again once a batch slot is free (schedule() seats it ahead of later arrivals). */
  resume(requestId: string): void {
    const r = this.requests.get(requestId);
    if (r) r.paused = false;
  }

  /** Removes the request (finished, cancelled or failed). Unknown ids are ignored: aborts race with finishes. */
  remove(requestId: string): void {
    this.requests.delete(requestId);
  }

  get size(): number {
    return this.requests.size;
  }

  /** Requests waiting to be seated (the stage's reported queue depth). */
  get queueDepth(): number {
    let n = 0;
    for (const r of this.requests.values()) if (r.status === 'waiting') n++;
    return n;
  }

  /** Requests holding a batch slot: the ones sharing the steps (paused ones, holding only KV, are not counted). */
  get numRunning(): number {
    let n = 0;
    for (const r of this.requests.values()) if (r.seated) n++;
    return n;
  }

  /** Positions whose KV the running requests hold (paused ones included): what counts against kvBudgetBytes. */
  get numKvTokens(): number {
    let n = 0;
    for (const r of this.requests.values()) if (r.status === 'running') n += r.numComputedTokens;
    return n;
  }

  /** Requests held back for their clients (they hold no slot, and are no load). */
  get numPaused(): number {
    let n = 0;
    for (const r of this.requests.values()) if (r.paused) n++;
    return n;
  }

  /**
   * `nowMs` (epoch ms): the playback policy's notion of now (deadlines before it are overdue). `deferred`: requests
   * this step leaves out, seats and KV kept (first audio first, FirstAudioFirst.ts: answers already speaking while
   * another's first audio is on its way).
   */
  schedule(nowMs = Date.now(), deferred: ReadonlySet<string> = NONE): SchedulerPlan {
    const { maxNumSeqs, maxNumBatchedTokens, kvBytesPerToken, kvBudgetBytes } = this.options;
    const items: ScheduledItem[] = [];
    const preempted: string[] = [];
    let tokenBudget = maxNumBatchedTokens;

    // 1. KV held after this step by running requests, before any new admission.
    const ordered = [...this.requests.values()].sort(
      this.options.policy === 'playback'
        ? byDeadline((r) => r.deadlineMs ?? Infinity, nowMs)
        : (a, b) => a.arrival - b.arrival,
    );
    const running = ordered.filter((r) => r.status === 'running');
    // Paused running requests hold KV, but no slot.
    let kvTokens = running.reduce((n, r) => n + r.numComputedTokens, 0);
    let numSeated = running.filter((r) => r.seated).length;
    let firstOutputsInStep = false; // a request in this step still waits for its first output: admit no one
    // Seat turns: who may take a free seat this step (null: off, anyone may), after long holders yielded theirs.
    const turn = this.seatTurn(ordered, deferred);
    const yielded = turn?.yielded.map((r) => r.requestId) ?? [];
    numSeated -= yielded.length;
    const longPrefillCap = longPrefillCapOf(ordered, deferred, this.yieldShare, this.options.maxNumBatchedTokens);

    // 2. Running requests first, oldest (playback: most urgent) first: they hold KV, and a slot unless they were
    //    paused since.
    for (const r of running) {
      if (tokenBudget === 0) break; // budget spent; the rest run next step
      if (r.status !== 'running') continue; // preempted by an older request earlier in this loop
      if (r.paused) continue; // a slow client holds this one back; it keeps its KV but not its slot
      if (deferred.has(r.requestId)) continue; // speaking while another's first audio is on its way: it keeps its seat
      const pending = r.numAvailableTokens - r.numComputedTokens;
      if (pending === 0) continue; // WAITING_FOR_CHUNK: nothing to compute until its next input arrives
      // Resumed: its slot went to someone else while it was paused. It takes the next free one, before step 3 admits
      // anyone; with none free it waits rather than overfill the batch (it keeps its KV meanwhile).
      if (!r.seated && (numSeated >= maxNumSeqs || (turn && !turn.next.has(r)))) continue;
      const numTokens = Math.min(pending, tokenBudget, this.perRequestTokens, longPrefillCap(r, pending));
      // Preempt until this step fits the KV budget: paused requests first (their clients are not reading), then the
      // newest running request not yet scheduled this step (possibly this one, as vLLM does). Preempted requests
      // restart from position 0 (recompute).
      let selfPreempted = false;
      while ((kvTokens + numTokens) * kvBytesPerToken > kvBudgetBytes) {
        const victim = this.newestPaused(preempted) ?? this.newestRunning(items, preempted);
        if (!victim) break;
        kvTokens -= victim.numComputedTokens;
        if (victim.seated) numSeated--;
        this.preempt(victim, preempted);
        if (victim === r) {
          selfPreempted = true;
          break;
        }
      }
      if (selfPreempted) continue;
      if (!r.seated) {
        this.seat(r);
        numSeated++;
      }
      items.push(this.item(r, numTokens));
      firstOutputsInStep ||= r.firstOutputPending;
      kvTokens += numTokens;
      tokenBudget -= numTokens;
    }

    const admitted: ScheduledItem[] = [];
    // 3. Admit waiting requests (FIFO; playback: by deadline) while slots, token budget and KV budget allow. A
    //    preempted request is not re-admitted in the step that preempted it (that would thrash).
    for (const r of ordered) {
      if (firstOutputsInStep) break;
      if (r.status !== 'waiting' || preempted.includes(r.requestId)) continue;
      if (numSeated >= maxNumSeqs || tokenBudget === 0) break; // FIFO: nobody overtakes the head of the queue
      if (r.paused) continue; // its client is not reading: it is admitted when it resumes
      if (deferred.has(r.requestId)) continue; // speaking (preempted): after the first audio on its way
      const pending = r.numAvailableTokens - r.numComputedTokens;
      if (pending === 0) continue; // admitted lazily, on its first chunk
      if (turn && !turn.next.has(r)) continue; // seat turns: others have waited longer
      const numTokens = Math.min(pending, tokenBudget, this.perRequestTokens);
      // A request that starts past position 0 (startAt) brings its KV along. Short of KV, paused requests give
      // theirs up (only if that makes it fit: dropping it for nothing would cost them a recompute).
      const kvNeeded = kvTokens + r.numComputedTokens + numTokens;
      if (kvNeeded * kvBytesPerToken > kvBudgetBytes) {
        const freed = this.preemptPausedToFit(kvNeeded, preempted);
        if (freed === null) break; // wait for KV
        kvTokens -= freed;
      }
      r.status = 'running';
      this.seat(r);
      numSeated++;
      const item = this.item(r, numTokens);
      items.push(item);
      admitted.push(item);
      kvTokens += r.numComputedTokens + numTokens;
      tokenBudget -= numTokens;
    }
    const alone = this.newcomersAlone(items, admitted, preempted) ?? this.firstOutputsAlone(items, preempted);
    this.aloneRun = alone === null ? 0 : this.aloneRun + 1;
    if (alone)
      return { items: alone, preempted, yielded, numScheduledTokens: alone.reduce((n, i) => n + i.numTokens, 0) };
    // Deadlines pick who is in the step, not the order of its batch: in arrival order, the same requests make the
    // same batch step after step, so the runner feeds its KV back as is (stages/models/SeqKvCache.ts) instead of
    // repacking every sequence's cache each time the deadlines reorder them.
    if (this.options.policy === 'playback')
      items.sort((a, b) => this.get(a.requestId).arrival - this.get(b.requestId).arrival);
    return { items, preempted, yielded, numScheduledTokens: maxNumBatchedTokens - tokenBudget };
  }

  /**
   * Records that the plan ran: scheduled positions are now computed. The core then feeds back what it learned
   * (setAvailable for sampled tokens, remove for finished requests).
   */
  update(plan: SchedulerPlan): void {
    if (plan.items.length === 0) return; // a plan, not a step: no clock moves
    this.steps++;
    const ran = new Set<string>();
    for (const item of plan.items) {
      const r = this.requests.get(item.requestId);
      if (!r) continue; // aborted while the step ran
      r.numComputedTokens = item.startPosition + item.numTokens;
      ran.add(r.requestId);
    }
    // Seat turns: a holder's turn goes on in its own steps and in the steps it had nothing to compute in; a step that
    // left it out (a newcomer alone, first audio first, speaking slices) is not its turn's.
    for (const r of this.requests.values())
      if (r.seated && (ran.has(r.requestId) || r.numAvailableTokens === r.numComputedTokens)) r.turnProgress++;
  }

  /**
   * Prefill first: the newcomers to run alone this step, or null for the mixed step. Only when each newcomer's whole
   * prompt is in the step and samples (a chunked prefill beside the decodes keeps them going; a context-only prefill
   * has no first output to hurry), some running request is in the step to go first, nobody was preempted for this
   * plan (its KV room was made for the mixed step), and the last step did not run newcomers alone (no starving).
   */
  private newcomersAlone(
    items: readonly ScheduledItem[],
    admitted: readonly ScheduledItem[],
    preempted: readonly string[],
  ): ScheduledItem[] | null {
    if (this.options.prefillFirst === false || this.aloneRun > 0) return null;
    if (admitted.length === 0 || admitted.length === items.length || preempted.length > 0) return null;
    if (!admitted.every((i) => i.sample)) return null;
    return [...admitted];
  }

  /**
   * First outputs first: the items of requests still making their first output, when the step also holds others
   * (none of it a newcomer's prompt: admission stops at a pending first output) and fewer than FIRST_OUTPUT_RUN_STEPS
   * plans in a row ran without those others; else null for the whole step.
   */
  private firstOutputsAlone(items: readonly ScheduledItem[], preempted: readonly string[]): ScheduledItem[] | null {
    if (this.options.prefillFirst === false || this.aloneRun >= FIRST_OUTPUT_RUN_STEPS || preempted.length > 0)
      return null;
    const first = items.filter((i) => this.get(i.requestId).firstOutputPending);
    return first.length > 0 && first.length < items.length ? first : null;
  }

  private item(r: ArRequest, numTokens: number): ScheduledItem {
    return {
      requestId: r.requestId,
      startPosition: r.numComputedTokens,
      numTokens,
      sample: r.sampleAtEnd && r.numComputedTokens + numTokens === r.numAvailableTokens,
    };
  }

  private seat(r: ArRequest): void {
    r.seated = true;
    r.seatedAtStep = this.steps;
    r.turnProgress = 0;
  }

  /**
   * Seat turns (null when off). The requests that want a seat (unseated, not paused, with input to compute) go by how
   * long they have waited, a newcomer (never run, or preempted) counted NEWCOMER_LEAD_TURNS turns ahead of its
   * arrival, so its first output does not wait behind long answers taking turns, yet a yielded one is back within a
   * few turns whoever keeps arriving. When they outnumber the free seats, holders yield theirs (KV kept), in one
   * handover at a time:
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
  private seatTurn(
    ordered: readonly ArRequest[],
    deferred: ReadonlySet<string>,
  ): { next: Set<ArRequest>; yielded: readonly ArRequest[] } | null {
    const turnSteps = this.options.seatTurnSteps;
    if (turnSteps == null) return null;
    const isNewcomer = (r: ArRequest) => r.status === 'waiting';
    const leadSteps = NEWCOMER_LEAD_TURNS * (this.turnLengthSteps ?? turnSteps);
    const rank = (r: ArRequest) => r.unseatedAtStep - (isNewcomer(r) ? leadSteps : 0);
    const wanting = ordered
      .filter((r) => !r.seated && !r.paused && !deferred.has(r.requestId) && r.numAvailableTokens > r.numComputedTokens)
      .sort((a, b) => rank(a) - rank(b) || a.arrival - b.arrival);
    const turnMaxSteps = TURN_MAX_STAGE_STEPS * turnSteps;
    const turnOver = this.steps - this.turnStartStep >= turnMaxSteps;
    const isDue = (r: ArRequest) => turnOver || r.turnProgress >= turnSteps;
    const isIdle = (r: ArRequest) => r.numAvailableTokens === r.numComputedTokens;
    const seated = ordered
      .filter((r) => r.seated && r.status === 'running')
      .sort(
        (a, b) =>
          Number(isDue(b)) - Number(isDue(a)) ||
          Number(isIdle(b)) - Number(isIdle(a)) ||
          a.seatedAtStep - b.seatedAtStep,
      );
    const free = Math.max(0, this.options.maxNumSeqs - seated.length);
    const short = wanting.length - free; // seats wanted beyond the free ones
    const newcomers = wanting.filter(isNewcomer).length - free;
    // Who may yield: a holder that has run a step, not one about to make its first output (due ones first).
    const movable = seated.filter((r) => this.steps > r.seatedAtStep && !r.firstOutputPending);
    const due = movable.filter(isDue).length;
    const yielded = movable.slice(0, Math.max(0, Math.min(short, Math.max(due, newcomers))));
    for (const r of yielded) {
      r.seated = false;
      r.unseatedAtStep = this.steps;
    }
    if (yielded.length > 0) {
      const stepsSinceHandover = this.steps - this.turnStartStep;
      if (due > 0) this.turnLengthSteps = Math.min(Math.max(stepsSinceHandover, turnSteps), turnMaxSteps);
      this.turnStartStep = this.steps;
      for (const r of seated) r.turnProgress = 0; // a handover starts a turn for every holder
    }
    return { next: new Set(wanting.slice(0, free + yielded.length)), yielded };
  }

  private preempt(r: ArRequest, preempted: string[]): void {
    r.numComputedTokens = 0;
    r.status = 'waiting';
    if (r.seated) r.unseatedAtStep = this.steps;
    r.seated = false;
    preempted.push(r.requestId);
  }

  /** The newest paused request that still holds KV (none is ever in the step). */
  private newestPaused(already: readonly string[]): ArRequest | undefined {
    let newest: ArRequest | undefined;
    for (const r of this.requests.values()) {
      if (r.status !== 'running' || !r.paused || already.includes(r.requestId)) continue;
      if (!newest || r.arrival > newest.arrival) newest = r;
    }
    return newest;
  }

  /**
   * Preempts paused requests, newest first, until `kvTokens` positions fit the KV budget; returns the positions freed,
   * or null (and preempts nobody) when all of their KV would not be enough.
   */
  private preemptPausedToFit(kvTokens: number, preempted: string[]): number | null {
    const { kvBytesPerToken, kvBudgetBytes } = this.options;
    const paused = [...this.requests.values()]
      .filter((r) => r.status === 'running' && r.paused && !preempted.includes(r.requestId))
      .sort((a, b) => b.arrival - a.arrival);
    let freed = 0;
    for (let i = 0; i < paused.length; i++) {
      freed += paused[i].numComputedTokens;
      if ((kvTokens - freed) * kvBytesPerToken > kvBudgetBytes) continue; // not enough yet: one more
      for (const victim of paused.slice(0, i + 1)) this.preempt(victim, preempted);
      return freed;
    }
    return null;
  }

  private newestRunning(scheduled: readonly ScheduledItem[], already: readonly string[]): ArRequest | undefined {
    let newest: ArRequest | undefined;
    for (const r of this.requests.values()) {
      if (r.status !== 'running' || already.includes(r.requestId)) continue;
      if (scheduled.some((i) => i.requestId === r.requestId)) continue;
      if (!newest || r.arrival > newest.arrival) newest = r;
    }
    return newest;
  }

  private get(requestId: string): ArRequest {
    const r = this.requests.get(requestId);
    if (!r) throw new Error(`unknown request ${requestId}`);
    return r;
  }
}
