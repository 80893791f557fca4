/**
 * When a stage warms its model. A stage that has not stepped for a while has its weights out of the caches: the other
 * processes' work has taken them, and this guest halts an idle vCPU at once. Beside sixteen long answers paced to
 * their speech, a newcomer's Talker prefill then took 4.1 ms and its first frame 3.6 ms, against 3.0 and 0.9 for the
 * newcomers after it (step traces, bench/NOTES.md, "Warm before the rows come").
 *
 * On an add (shouldWarm): the Talker and Code2Wav get a request's add before its input (the Talker waits for the
 * Thinker's prefill, Code2Wav for the Talker's first frames). A step of one dummy position in that wait brings the
 * weights back (the Talker's: 1.9-2.3 ms when cold), and the newcomer's own steps run warm. Once an idle stretch: the
 * adds of a burst warm once, and a stage that steps all the time (a closed loop's back-to-back requests) never warms.
 *
 * While idle (keepWarmAtMs): the entry stage (the Thinker) computes at its add, so a warm-up there delays its own
 * prefill (+1-2 ms measured, bench/NOTES.md). It keeps warm instead, for keepWarmMs after its last step: a dummy step
 * every KEEP_WARM_MIN_PERIOD_MS, or less often when the step costs more than KEEP_WARM_MAX_SHARE of that, so a model
 * too big for the caches costs at most that share of a core. Only a config that holds the idle cores polling
 * (cpu_wakeup_latency_us; stageMain.ts) asks for it: those cores burn while idle anyway. A request that comes
 * meanwhile finds the weights warm: at c=1, the Thinker idle while its answer's audio was made, its prefill ran
 * 0.1-1.2 ms sooner at the median (bench/NOTES.md, "The entry stage kept warm while idle").
 */

/** A stage idle this long (ms since its last step ended) warms its model when a request is added. */
export const WARM_AFTER_IDLE_MS = 20;

/**
 * How long after its last step an idle entry stage keeps warm (ms), where the config asks for it: while the answers it
 * wrote are still being spoken downstream (its text is done first; at c=1 on tiny-omni the Talker and Code2Wav end an
 * answer ~150-250 ms after the Thinker's last token), when the next request of a closed loop or a queue comes; not
 * while a server sits idle. With the hold's 2 s linger instead, the issue command's idle second server kept warm
 * beside the other's next block, and that block's first requests waited for a core (bench/NOTES.md).
 */
export const KEEP_WARM_WINDOW_MS = 500;

/** The shortest time (ms) between two keep-warm steps: shorter than WARM_AFTER_IDLE_MS, the stretch that goes cold. */
export const KEEP_WARM_MIN_PERIOD_MS = 15;

/**
 * The share of a core keep-warm steps may take: their period grows with their own cost beyond it. The tiny Thinker's
 * step (one position) costs ~0.7-0.8 ms of model time, two positions ~1.4: a period of 15 ms either way. At 0.04
 * (a 50 ms period, with two positions) the prefill ran no sooner.
 */
export const KEEP_WARM_MAX_SHARE = 0.15;

/**
 * The longest a keep-warm step may take (ms) for a stage to go on keeping warm: a request that comes during one waits
 * for its end. A model whose cheapest of its first KEEP_WARM_TRIAL_STEPS warm steps took longer is kept warm no more
 * (a Thinker of real size: the assistant's SmolLM2-135M took 47-50 ms for a step of two positions, and its weights
 * are more than a core's caches keep anyway; kept warm, an answer's request could have waited that long for one).
 */
export const KEEP_WARM_MAX_STEP_MS = 5;

/** Warm steps a stage runs before KEEP_WARM_MAX_STEP_MS judges it (the first after a long idle run cold). */
export const KEEP_WARM_TRIAL_STEPS = 3;

/**
 * A keep-warm step is skipped when the stage waited longer than this for a core since it went to sleep (ms; the
 * kernel's run-queue wait, processCpu.ts runQueueWaitMsOf), and the next is due a period later: the cores have other
 * work then, which the dummy step would take one from. At c=1 on tiny-omni a Thinker whose timer came due on a busy
 * core was moved to the free one by main's next add itself (an add that starts a model keeps its stage off main's core,
 * StageWorker.ts): it ran its timer 0.08 ms after main began the add, 0.8-3.1 ms late, and the add, written ~0.1 ms
 * later, waited for the whole dummy step: 1.1-3.5 ms more to the first packet in 11 of 120 answers, in none with this
 * skip (bench/NOTES.md, "A keep-warm step in an add's way"). A timer's own lateness says less: libuv counts whole
 * milliseconds.
 */
export const KEEP_WARM_MAX_CORE_WAIT_MS = 0.25;

export class IdleWarmth {
  #lastStepEndMs = Number.NEGATIVE_INFINITY;
  #warmedSinceStep = false;
  #lastKeptWarmMs = Number.NEGATIVE_INFINITY;
  #keepWarmCostMs = 0;
  #cheapestKeepWarmMs = Number.POSITIVE_INFINITY;
  #keptWarmSteps = 0;

  constructor(
    private readonly afterIdleMs = WARM_AFTER_IDLE_MS,
    /** How long after its last step an idle stage keeps warm (0: never). */
    private readonly keepWarmMs = 0,
  ) {}

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

  /**
   * When (performance.now() ms) the idle stage's next keep-warm step is due: a period after its last step or
   * keep-warm step, while that is within keepWarmMs of its last step. Null when it keeps warm no more (or never
   * stepped: the load's warm-up ran last; or its first keep-warm steps all took over KEEP_WARM_MAX_STEP_MS).
   */
  keepWarmAtMs(): number | null {
    if (this.keepWarmMs <= 0 || this.#lastStepEndMs === Number.NEGATIVE_INFINITY) return null;
    if (this.#keptWarmSteps >= KEEP_WARM_TRIAL_STEPS && this.#cheapestKeepWarmMs > KEEP_WARM_MAX_STEP_MS) return null;
    const periodMs = Math.max(KEEP_WARM_MIN_PERIOD_MS, this.#keepWarmCostMs / KEEP_WARM_MAX_SHARE);
    const atMs = Math.max(this.#lastStepEndMs, this.#lastKeptWarmMs) + periodMs;
    return atMs - this.#lastStepEndMs <= this.keepWarmMs ? atMs : null;
  }

  /**
   * Whether the keep-warm step due now (`nowMs`) runs, the stage having waited `coreWaitMs` for a core since it went
   * to sleep: not past KEEP_WARM_MAX_CORE_WAIT_MS, and then the next is due a period from now.
   */
  coreFree(coreWaitMs: number, nowMs: number): boolean {
    if (coreWaitMs <= KEEP_WARM_MAX_CORE_WAIT_MS) return true;
    this.#lastKeptWarmMs = nowMs;
    return false;
  }

  /** A keep-warm step ran from startMs to endMs (performance.now()). */
  keptWarm(startMs: number, endMs: number): void {
    this.#lastKeptWarmMs = endMs;
    this.#keepWarmCostMs = endMs - startMs;
    this.#cheapestKeepWarmMs = Math.min(this.#cheapestKeepWarmMs, endMs - startMs);
    this.#keptWarmSteps++;
  }
}
