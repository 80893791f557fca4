/**
 * Speaking slices (`chunk_policy.speaking_slice`, issue 41 item 5). Pure: the core says which of a step's requests
 * may wait.
 *
 * First audio first (FirstAudioFirst.ts) holds the answers already speaking back once a newcomer's add has reached a
 * stage, but not the step in progress when it comes: beside sixteen long spoken answers the Thinker and the Talker run
 * their batch of sixteen back to back, and a newcomer's add and rows wait for that step (a Talker step of sixteen at
 * 50-64 ms against 4-9 ms for one, load 34 in an own group; the newcomer's first audio 2.4-3.5x its 28 ms alone,
 * bench/NOTES.md). Those answers are seconds of audio ahead of their listeners and need no step of sixteen: so a
 * step takes at most `size` of the answers that may wait (speaking for a while, listener far ahead: the same test as
 * first audio first's), one group of them a step, in turns, and the others keep their seats and KV for the next
 * steps.
 *
 * The groups are fixed, not drawn anew each step: a step that runs other sequences than the last step of each of them
 * repacks their KV (stages/models/SeqKvCache.ts, AppendKvCache.ts), and a rotation of "the least recently stepped
 * four" is only stable when the count divides by four. Ten answers in such a rotation ran {0-3}, {4-7}, {8, 9, 0, 1},
 * {2-5}, ...: every step a new batch, every step each sequence's KV copied, and the Thinker's and the Talker's decodes
 * cost 7-8x their CPU a row in steps of ten (bench/NOTES.md, "Speaking slices at c=10"). So an answer that may wait
 * joins a group once (the fullest one with room, else a new one) and stays in it until it leaves the stage or gives
 * its batch seat up; a group whose members could fit the others' room is dissolved into them, so there are never more
 * turns than needed.
 *
 * An answer that gives its seat up (ArScheduler's seat turns) or loses it (preempted) leaves its group, and the one
 * seated in its place fills the room: seventeen answers on sixteen seats make four groups of four, and a handover
 * changes one group. Kept in its group, the yielded answer held a place there while it waited, so the seventeenth made
 * a fifth group that ran a single row a step (~3.6-4 ms of the Talker's CPU for that row), and every handover changed
 * two groups (each repacked once; bench/NOTES.md, "Seat turns that keep a batch").
 *
 * The requests that may not wait (a newcomer in its first second of speech) run in steps of their own, every other
 * step, the groups in turns between. Run beside each group, a newcomer made every step a new batch, the group plus
 * it: 18-21% of the Thinker's and the Talker's decode steps around newcomers repacked their KV (1.3-1.8x the CPU of
 * a step that did not, up to 14-54 ms), about half of them for that (bench/NOTES.md, "Where the repacks come from").
 */
/**
 * A step of the answers that may wait is sliced when it would cost at least this much of the model's CPU (ms), whatever
 * the slices cost, until the stage has measured what a newcomer's prefill costs it (then that is the bound, and the
 * slices' size follows it: SLICE_SIZE_MARGIN). A step has a fixed cost of its own (~2.75 ms of CPU on tiny-omni's
 * Thinker and Talker on a machine where their first packet alone took 25-37 ms, from steps of ten against fixed
 * groups of four at a 100-token context), so there slices of four cost 1.5-1.65x the CPU a row of one step of ten or
 * sixteen at short contexts and nothing more at long ones (bench/NOTES.md, "Speaking slices at c=10"). Below this a
 * step in progress costs a newcomer no more than its own prefill in the stage on such a machine (12-16 ms).
 */
export const SLICE_MIN_STEP_MS = 16;

/**
 * A shorter step is sliced too when slicing is about free: the slices' steps, one a group, would cost at most this
 * share more CPU than the one step they replace (by the same estimate). On a machine three times as fast (a first
 * packet alone 9-12 ms, the stages' fixed cost a step ~0.1 ms) a Talker step of sixteen long answers cost 13-15 ms and
 * four slices of four the same CPU, but at SLICE_MIN_STEP_MS alone nothing was sliced: a newcomer waited for a whole
 * step of sixteen, longer than its first packet alone, and the step after its first audio repacked fifteen answers' KV
 * into memory never used before (300-450 ms of one step; bench/NOTES.md, "Speaking slices on a faster machine").
 */
export const SLICE_FREE_OVERHEAD = 0.25;

/** A step shorter than this (ms) is never sliced: a newcomer waiting for it waits less than a millisecond. */
export const SLICE_FLOOR_MS = 1;

/**
 * Slices once on stay on while a step of all the answers that may wait would cost at least this share of
 * SLICE_MIN_STEP_MS, or while slicing would cost at most SLICE_FREE_OVERHEAD over this share: a switch either way
 * repacks every one of their KV caches (stages/models/AppendKvCache.ts), and at long contexts that is the costliest
 * step there is. Sixteen long answers' Thinker, with one bound, changed mode 25 times in a run: slices of four at 4-5
 * ms of CPU priced a step of sixteen under the bound, the steps of sixteen then cost 15-17 ms and priced it over, and
 * each switch cost a step of sixteen rows' repack (55-89 ms) or four slices' (10-56 ms each), the steps a newcomer
 * arriving then waited for (up to 99 ms of wall time; bench/NOTES.md, "Slices that switched back and forth").
 */
export const SLICE_KEEP_SHARE = 0.5;

/**
 * Once the stage has measured a new prompt's prefill (src/sched/DecodeStepCost.ts, NewcomerPrefillCost), the rule
 * SLICE_MIN_STEP_MS stood for is applied as measured: a step in progress costs a newcomer no more than its own
 * prefill there (beyond the wait for its input, where that comes after its add: the Talker's rows). The bound is
 * that cost, and a slice is as many answers (at most `speaking_slice`) as a step can take within it, since a slice
 * is the step a newcomer meets. A fixed four did not follow the cost of a row, which grows with the context: on a
 * machine twice as slow the Talker's slices of four late in long answers cost 8.2-10.7 ms of CPU against a
 * newcomer's Talker prefill of 4.3-7.3 (bench/NOTES.md, "A slower machine, long caches and pauses counted as frame
 * time"). The size moves only when the estimate is this share beyond the bound (shrinking) or within it
 * (growing): a new size regroups the answers, and each changed group's KV is repacked once.
 */
export const SLICE_SIZE_MARGIN = 0.25;

/**
 * The size changes once the estimate has asked for it this many steps in a row. The estimate of a slice's step reads
 * whichever groups ran last, whose contexts differ; a size taken from each step moved ~800 times in one run of
 * sixteen long answers (four to one and back within seconds), each move a regrouping and its repacks.
 */
export const SLICE_RESIZE_STEPS = 32;

export class SpeakingSlices {
  /** Each request's group (an index into `groups`). */
  private readonly groupOf = new Map<string, Group>();
  private readonly groups: Group[] = [];
  private steps = 0;
  /** Why the last step priced was sliced, if it was (SLICE_KEEP_SHARE): its cost, or its slices' being about free. */
  private slicing: 'bound' | 'free' | null = null;
  /** The slices' size now: `maxSize` until a newcomer's prefill is measured, then the rows that fit its cost. */
  private size: number;
  /** Steps in a row whose estimate asked for the same other size, `votedSize` (SLICE_RESIZE_STEPS). */
  private resizeVotes = 0;
  private votedSize = 0;
  /** Whether the last sliced step ran the requests that may not wait (they and the groups take turns). */
  private ownTurnLast = false;

  constructor(
    private readonly maxSize: number,
    private readonly minStepMs = SLICE_MIN_STEP_MS,
  ) {
    if (!Number.isInteger(maxSize) || maxSize < 1) throw new RangeError('speaking_slice must be an integer >= 1');
    this.size = maxSize;
  }

  /** The slices' size now (at most `speaking_slice`). */
  get sliceSize(): number {
    return this.size;
  }

  /**
   * Which of a step's requests (in the plan's order) run in it: while sliced, the ones that may not wait and the
   * groups of those that may take turns, every other step theirs and one group (at most the slices' size, the one
   * least recently stepped) in each step between. null: the step runs as planned (no more than that many may wait,
   * or a decode step of them is not worth slicing by `stepMs`, the model's CPU a step of that many rows costs now,
   * src/sched/DecodeStepCost.ts; null: not known yet). It is worth slicing when it would cost
   * the bound (`newcomerMs`, a newcomer's prefill here and any wait for its input, once measured; minStepMs
   * before), or SLICE_FLOOR_MS and slices that cost at most SLICE_FREE_OVERHEAD more; once sliced, a step stays
   * sliced down to SLICE_KEEP_SHARE of the one and up to 1 / SLICE_KEEP_SHARE of the other. With `newcomerMs`, the
   * size is the rows a step takes within it.
   */
  keep(
    planned: readonly string[],
    mayWait: (requestId: string) => boolean,
    stepMs: (rows: number) => number | null,
    newcomerMs: number | null = null,
  ): ReadonlySet<string> | null {
    this.steps++;
    const waitable = planned.filter(mayWait);
    if (waitable.length <= this.size) return null;
    const waits = new Set(waitable);
    const boundMs = newcomerMs === null ? this.minStepMs : Math.max(SLICE_FLOOR_MS, newcomerMs);
    if (newcomerMs !== null) this.resize(stepMs, boundMs);
    const cost = stepMs(waitable.length);
    const slice = stepMs(this.size);
    if (cost === null || slice === null) return null;
    this.slicing = this.slicedBy(cost, Math.ceil(waitable.length / this.size) * slice, boundMs);
    if (!this.slicing) return null;
    this.merge();
    for (const id of waitable) if (!this.groupOf.has(id)) this.join(id);
    const mustRun = planned.filter((id) => !waits.has(id));
    this.ownTurnLast = mustRun.length > 0 && !this.ownTurnLast;
    if (this.ownTurnLast) return new Set(mustRun);
    const present = new Set(waitable.map((id) => this.groupOf.get(id)!));
    const turn = [...present].reduce((a, b) => (b.lastStep < a.lastStep ? b : a));
    turn.lastStep = this.steps;
    return new Set(waitable.filter((id) => this.groupOf.get(id) === turn));
  }

  /**
   * Why a step costing `costMs` is sliced (its slices costing `slicedMs` in all), or null: each rule keeps slices it
   * started down to its SLICE_KEEP_SHARE. A step priced by one size alone looks free to slice (no fixed cost fitted
   * yet): the slices' own steps then fit it, and a bound kept with the other rule's share would hold them on for good.
   */
  private slicedBy(costMs: number, slicedMs: number, boundMs: number): 'bound' | 'free' | null {
    if (costMs >= boundMs * (this.slicing === 'bound' ? SLICE_KEEP_SHARE : 1)) return 'bound';
    const overhead = SLICE_FREE_OVERHEAD / (this.slicing ? SLICE_KEEP_SHARE : 1);
    return costMs >= SLICE_FLOOR_MS && slicedMs <= costMs * (1 + overhead) ? 'free' : null;
  }

  /**
   * The slices' size for a bound of `boundMs`: shrunk to the rows a step takes within the bound and SLICE_SIZE_MARGIN
   * over it, grown to those within the margin under it (at least one, at most `speaking_slice`); kept while the
   * estimate is not known.
   */
  private resize(stepMs: (rows: number) => number | null, boundMs: number): void {
    const costs: number[] = [];
    for (let rows = 1; rows <= this.maxSize; rows++) {
      const ms = stepMs(rows);
      if (ms === null) return;
      costs.push(ms);
    }
    const fits = (limitMs: number) => {
      let rows = costs.length;
      while (rows > 1 && costs[rows - 1] > limitMs) rows--;
      return rows;
    };
    const shrunk = fits(boundMs * (1 + SLICE_SIZE_MARGIN));
    const grown = fits(boundMs * (1 - SLICE_SIZE_MARGIN));
    const target = shrunk < this.size ? shrunk : grown > this.size ? grown : this.size;
    this.resizeVotes = target === this.size ? 0 : target === this.votedSize ? this.resizeVotes + 1 : 1;
    this.votedSize = target;
    if (this.resizeVotes < SLICE_RESIZE_STEPS) return;
    this.resizeVotes = 0;
    const shrinking = target < this.size;
    this.size = target;
    if (shrinking) this.trim();
  }

  /** After a shrink: a group over the size keeps its first members; the others join groups with room. */
  private trim(): void {
    for (const group of [...this.groups]) {
      const extra = [...group.members].slice(this.size);
      for (const id of extra) this.removed(id);
      for (const id of extra) this.join(id);
    }
  }

  /** The request left the stage or its batch seat (it joins a group with room when it runs again). */
  removed(requestId: string): void {
    const group = this.groupOf.get(requestId);
    if (!group) return;
    this.groupOf.delete(requestId);
    group.members.delete(requestId);
    if (group.members.size === 0) this.groups.splice(this.groups.indexOf(group), 1);
  }

  /** Puts the request into the fullest group with room (fewest turns, fullest steps), else a new one. */
  private join(requestId: string): void {
    let group: Group | undefined;
    for (const g of this.groups)
      if (g.members.size < this.size && (!group || g.members.size > group.members.size)) group = g;
    if (!group) this.groups.push((group = { members: new Set(), lastStep: 0 }));
    group.members.add(requestId);
    this.groupOf.set(requestId, group);
  }

  /** While the smallest group's members fit the others' room, they move there (one turn fewer). */
  private merge(): void {
    for (;;) {
      if (this.groups.length < 2) return;
      const smallest = this.groups.reduce((a, b) => (b.members.size < a.members.size ? b : a));
      const others = this.groups.filter((g) => g !== smallest);
      const room = others.reduce((n, g) => n + this.size - g.members.size, 0);
      if (room < smallest.members.size) return;
      this.groups.splice(this.groups.indexOf(smallest), 1);
      for (const id of smallest.members) {
        this.groupOf.delete(id);
        this.join(id);
      }
    }
  }
}

interface Group {
  readonly members: Set<string>;
  /** The step (this class's own count) the group last ran in; 0: never. */
  lastStep: number;
}
