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
 * over in turns, the batch a handover makes running unchanged for a turn (seatTurns.ts).
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
import { firstPrefillPiece } from './chunkPolicy.ts';
import { byDeadline } from './playback.ts';

/**
 * First outputs first: at most this many steps in a row run without the requests past their first output. A first
 * chunk sized for a newcomer alone is 2 frames (the prefill and one decode: chunkPolicy.ts), for up to 8 newcomers 4;
 * a steady stream of newcomers still leaves the others a step in every FIRST_OUTPUT_RUN_STEPS + 1.
 */
const FIRST_OUTPUT_RUN_STEPS = 4;

const NONE: ReadonlySet<string> = new Set();

import type { ArSchedulerOptions, ArStatus, ScheduledItem, SchedulerPlan } from './arPlan.ts';
import { longPrefillCapOf, yieldShareOf } from './longPrefillYield.ts';
import { SeatTurns, type SeatHolder } from './seatTurns.ts';
export type { ArSchedulerOptions, ArStatus, ScheduledItem, SchedulerPlan } from './arPlan.ts';

interface ArRequest extends SeatHolder {
  status: ArStatus;
  /** Its first step computes this share of its pending positions (splitFirstStep; null: as any step). */
  firstStepShare: number | null;
  /** Whether reaching numAvailableTokens samples an output (false: the known positions are context only). */
  sampleAtEnd: boolean;
  /** Epoch ms its next output is due (playback policy); null: none. */
  deadlineMs: number | null;
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
  /** Seat turns (null: off). */
  private readonly turns: SeatTurns | null;

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
    const turnSteps = options.seatTurnSteps;
    this.turns = turnSteps == null ? null : new SeatTurns(turnSteps, options.maxNumSeqs);
  }

  add(requestId: string, numAvailableTokens: number): void {
    if (this.requests.has(requestId)) throw new Error(`request ${requestId} is already scheduled`);
    this.requests.set(requestId, {
      requestId,
      arrival: this.arrivals++,
      status: 'waiting',
      firstStepShare: null,
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

  /**
   * The request's first step computes `share` of the positions pending then (chunkPolicy.ts firstPrefillPiece: none
   * when they are few), the rest in the steps after it: a Thinker's prompt whose first rows a Talker prefills while
   * the Thinker computes the others. Only for a request that is not running (a cached prefix adopted or not).
   */
  splitFirstStep(requestId: string, share: number): void {
    const r = this.get(requestId);
    if (r.status !== 'waiting') throw new Error(`request ${requestId} has run already: its first step is over`);
    r.firstStepShare = share;
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
    const turn = this.turns?.handOver(ordered, deferred, this.steps) ?? null;
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
      const piece = firstPrefillPiece(r.firstStepShare, pending) ?? Number.POSITIVE_INFINITY;
      const numTokens = Math.min(pending, tokenBudget, this.perRequestTokens, piece);
      // A request that starts past position 0 (startAt) brings its KV along. Short of KV, paused requests give
      // theirs up (only if that makes it fit: dropping it for nothing would cost them a recompute).
      const kvNeeded = kvTokens + r.numComputedTokens + numTokens;
      if (kvNeeded * kvBytesPerToken > kvBudgetBytes) {
        const freed = this.preemptPausedToFit(kvNeeded, preempted);
        if (freed === null) break; // wait for KV
        kvTokens -= freed;
      }
      r.status = 'running';
      r.firstStepShare = null; // its first step: the share applies to this one alone
      this.seat(r);
      numSeated++;
      const item = this.item(r, numTokens, numTokens === piece); // piece < pending when finite
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
    this.turns?.stepRan(this.requests.values(), ran);
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

  private item(r: ArRequest, numTokens: number, splitFirst = false): ScheduledItem {
    return {
      requestId: r.requestId,
      startPosition: r.numComputedTokens,
      numTokens,
      sample: r.sampleAtEnd && r.numComputedTokens + numTokens === r.numAvailableTokens,
      ...(splitFirst ? { splitFirst } : {}),
    };
  }

  private seat(r: ArRequest): void {
    r.seated = true;
    r.seatedAtStep = this.steps;
    r.turnProgress = 0;
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
