/**
 * The CPU a decode step of n rows costs a stage now (ms): speaking slices' estimate of the step they would cut
 * (src/sched/SpeakingSlices.ts). Pure: the core reports each decode step's rows and CPU.
 *
 * A step has a cost of its own beside its rows' (~2.75 ms of CPU on tiny-omni's Thinker and Talker), so the CPU a row
 * costs depends on the step's size: a step of sixteen speaking answers cost 8-12 ms (0.5-0.75 ms a row) where a slice
 * of four of them cost 4.4 ms (1.1 a row). The estimate used to be the running mean of the CPU a row, over whatever
 * steps ran: once slices were on, it read the slices' rows and priced the step of sixteen at 4x a slice (17.6 ms, over
 * SLICE_MIN_STEP_MS), so they stayed on for good; before, one or two slow steps (23-59 ms of CPU among 8-12 ms ones, a
 * collection or the machine's load; before the first slice in 9 of 10 traced stages) moved it over the bound. Whether
 * a newcomer met steps of sixteen or of four depended on whether such a step had happened yet, not on what a step
 * cost (bench/NOTES.md, "The first newcomer: an audio burst, and slices switched on by one slow step"). So each
 * size keeps the median of its last few steps (one slow step moves nothing), and a step of n is priced by a line
 * through them, fixed cost and cost a row, fitted while sizes far enough apart have run recently; while only one size
 * runs (the slices, steady), its cost a row is taken beyond the fixed cost last fitted.
 */

/** Steps of one size whose median prices it: one or two slow steps among them move nothing. */
const SAMPLES_PER_SIZE = 5;
/** Steps of a size measured before it counts: a median of fewer is one step's, the first possibly a slow one. */
const MIN_SAMPLES = 3;
/**
 * A size counts in the fit while it ran within this many decode steps: the cost a row moves with the contexts and the
 * machine's load, and a line through one size's old cost and another's fresh one puts the difference into the fixed
 * cost, which then prices every step after (a step of sixteen stayed priced over the bound with the slices' rows at a
 * third of the cost). Two sizes run that close together while a newcomer decodes beside slices, or beside the rest.
 */
const RECENT_STEPS = 8;

interface SizeCost {
  readonly samples: number[];
  lastStep: number;
}

export class DecodeStepCost {
  private readonly sizes = new Map<number, SizeCost>();
  private steps = 0;
  /** The fixed cost of a step as last fitted (ms); null: never fitted (no two sizes far enough apart yet). */
  private fixedMs: number | null = null;

  /** A decode step of `rows` rows cost `cpuMs` of the stage's CPU. */
  observe(rows: number, cpuMs: number): void {
    if (!(rows >= 1) || !Number.isFinite(cpuMs) || cpuMs < 0) return;
    this.steps++;
    let size = this.sizes.get(rows);
    if (!size) this.sizes.set(rows, (size = { samples: [], lastStep: 0 }));
    if (this.steps - size.lastStep > RECENT_STEPS) size.samples.length = 0; // back after a while: its old cost is stale
    size.samples.push(cpuMs);
    if (size.samples.length > SAMPLES_PER_SIZE) size.samples.shift();
    size.lastStep = this.steps;
    const fit = fitLine(this.recent());
    if (fit) this.fixedMs = fit.fixedMs;
  }

  /** What a decode step of `rows` rows would cost now (ms), or null while no size has run MIN_SAMPLES steps lately. */
  estimate(rows: number): number | null {
    const points = this.recent();
    if (points.length === 0) return null;
    const fit = fitLine(points);
    if (fit) return fit.fixedMs + fit.rowMs * rows;
    // One size (or sizes too close to tell a row from the step): its cost a row beyond the fixed cost last fitted.
    const [size, ms] = points.reduce((a, b) => (b[0] > a[0] ? b : a));
    const fixed = Math.min(this.fixedMs ?? 0, ms);
    return fixed + ((ms - fixed) / size) * rows;
  }

  /** Each recently run size and the median of its steps' CPU. */
  private recent(): [rows: number, ms: number][] {
    const out: [number, number][] = [];
    for (const [rows, s] of this.sizes) {
      if (this.steps - s.lastStep >= RECENT_STEPS) continue;
      if (s.samples.length >= MIN_SAMPLES) out.push([rows, median(s.samples)]);
    }
    return out;
  }
}

/**
 * What a newcomer's prefill costs a stage now (ms of CPU): the median of the last new requests' prefills, each the
 * CPU of every step that computed its positions before its first output (its share of each, when a step prefilled
 * several). Speaking slices take it as the cost a step in progress may have (src/sched/SpeakingSlices.ts,
 * SLICE_SIZE_MARGIN). A fresh server's first prefills may all come together (sixteen answers sent at once): a share of
 * their step is what each cost, at most what one alone would, so a newcomer right after them is already counted for.
 *
 * A prompt prefilled in pieces (the first prefill in two, a chunked prefill, the Talker's rows as the Thinker sends
 * them) counts whole. Priced by its steps, a piece stood for a prefill: the Talker's half-prompt pieces (8-10 ms of
 * CPU where the prompt took 18) set the bound below a decode step of six answers (8-14 ms late in them), so at c=10
 * the Talker ran those six in slices of four and two, each step's own cost twice, its CPU there 1.43x sync's
 * Talker's (bench/NOTES.md, "A newcomer's prefill counted whole"). A request whose prefill shared a step with other
 * work (decodes beside it), or was preempted and starts again, is not counted: its CPU is not its own. A prompt whose
 * head came from the prefix cache counts its tail, as what that newcomer cost (left out, the bound beside sixteen long
 * answers rose to a new chat's prefill and the first newcomers came later: the same notes).
 *
 * A stage whose newcomers' input comes after their add (the Talker: its prompt rows are the Thinker's first output)
 * adds to that cost how long the input takes to come: the median of the last newcomers' add -> first input sent
 * upstream. A step in progress at a newcomer's add runs while the stages before it compute that input (first audio
 * first holds the answers that may wait from the add on, FirstAudioFirst.ts), so it delays the newcomer only by what
 * it lasts beyond that. Priced by its own prefill alone, the Talker sliced steps that ended long before the rows
 * came: at c=10 a cached prompt's tail (3-4 ms) set the bound under a step of six answers (6-14 ms), and the Talker's
 * CPU rose with the slices' steps (bench/NOTES.md, "The Talker's bound counts the wait for its input"). Pure: the
 * core reports the adds, the inputs, the steps and the first outputs.
 */
export class NewcomerPrefillCost {
  private readonly samples: number[] = [];
  /** CPU so far of each new request's prefill; null once one of its steps shared other work. */
  private readonly sofar = new Map<string, number | null>();
  /** When each new request whose input comes later was added (epoch ms), until that input came. */
  private readonly addedAt = new Map<string, number>();
  /** The last newcomers' add -> first input (ms). */
  private readonly inputWaits: number[] = [];

  /**
   * A new request's add was read at `readAtMs` (epoch ms); its input comes from upstream later (input()). Its wait is
   * measured from `admittedAtMs` (main's clock, maybe another host's), trusted as far as the add can have taken to
   * come here and be read (`maxWayMs`: the step in progress and the hop), and no later than the read.
   */
  added(requestId: string, readAtMs: number, admittedAtMs = readAtMs, maxWayMs = 0): void {
    this.addedAt.set(requestId, Math.min(readAtMs, Math.max(readAtMs - maxWayMs, admittedAtMs)));
  }

  /**
   * An input of the request came: put upstream at `sentAtMs` and taken here at `takenAtMs` (epoch ms). The first
   * after its add is measured from the send (when the stage was in a step, its take waited for the step's end, the
   * very wait this measures against), at most the take (another host's clock ahead of this one's).
   */
  input(requestId: string, sentAtMs: number, takenAtMs: number): void {
    const addedAtMs = this.addedAt.get(requestId);
    if (addedAtMs === undefined) return;
    this.addedAt.delete(requestId);
    const waitMs = Math.min(sentAtMs, takenAtMs) - addedAtMs;
    if (!Number.isFinite(waitMs)) return;
    this.inputWaits.push(Math.max(0, waitMs));
    if (this.inputWaits.length > SAMPLES_PER_SIZE) this.inputWaits.shift();
  }

  /**
   * A step computed prompt positions of `requestIds`, new requests (none has an output yet), at `cpuMs` of the
   * stage's CPU; `alone`: the step ran nothing else (else the requests are not counted).
   */
  prefilled(requestIds: readonly string[], cpuMs: number, alone: boolean): void {
    // No CPU read (a clock that did not move) is no measure: a prompt is never free.
    const share = alone && Number.isFinite(cpuMs) && cpuMs > 0 ? cpuMs / requestIds.length : null;
    for (const id of requestIds) {
      const before = this.sofar.get(id);
      this.sofar.set(id, share === null || before === null ? null : (before ?? 0) + share);
    }
  }

  /** The request sampled its first output: its prefill is complete. */
  sampled(requestId: string): void {
    const total = this.sofar.get(requestId);
    this.sofar.delete(requestId);
    if (total === undefined || total === null) return;
    this.samples.push(total);
    if (this.samples.length > SAMPLES_PER_SIZE) this.samples.shift();
  }

  /** The request left before its first output, or was preempted (its prefill starts again): not counted. */
  removed(requestId: string): void {
    this.sofar.delete(requestId);
    this.addedAt.delete(requestId);
  }

  /** Requests whose prefill or input is being waited for (for tests: nothing is kept for a request that left). */
  get pending(): number {
    return this.sofar.size + this.addedAt.size;
  }

  /**
   * The median of the last prefills, and of the last waits for an input after an add when the stage has reported
   * any (input()); null before the first prefill.
   */
  estimate(): number | null {
    if (this.samples.length === 0) return null;
    return median(this.samples) + (this.inputWaits.length > 0 ? median(this.inputWaits) : 0);
  }
}

/**
 * The least-squares line through (rows, ms), when the sizes span at least a factor of two (closer sizes differ by
 * less than a step's noise); its fixed cost kept within [0, the cheapest size's cost] and its cost a row >= 0.
 */
function fitLine(points: readonly [number, number][]): { fixedMs: number; rowMs: number } | null {
  const xs = points.map(([x]) => x);
  if (points.length < 2 || Math.max(...xs) < 2 * Math.min(...xs)) return null;
  const n = points.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const rowMs = Math.max(0, sxy / sxx);
  const cheapest = Math.min(...points.map(([, y]) => y));
  const fixedMs = Math.min(cheapest, Math.max(0, my - rowMs * mx));
  return { fixedMs, rowMs: rowMs > 0 ? rowMs : (my - fixedMs) / mx };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
