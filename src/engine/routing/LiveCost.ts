/**
 * What routing's TTFT predictions miss, per live request, for admission on latency (Router.estimate()). The
 * prediction charges the prompt tokens queued on a Thinker at its learned rate; it does not see that on shared
 * cores every live request's decode steps (Thinker, Talker, Code2Wav) slow everyone's first packet, and its rates
 * are learned from first tokens, seconds after the load that slowed them arrived. Measured under overload (tiny-omni
 * at 12 req/s, 2 cores): admitted on the prediction plus how long audio lately followed text, the admitted requests'
 * TTFP p50 was 5.9 s against a 1.5 s bound. So each request's miss (actual first token or first audio, less what was
 * predicted at its admission) is learned per live request at its admission, and a newcomer is charged that for
 * every request live now: the charge rises the moment load arrives, before any of it has been measured. (Since
 * issue 41: per request before its first packet, with the steps in progress charged as measured; below.)
 */
import { AloneTimes } from './AloneTimes.ts';

/** Weight of a new sample (exponential moving average), as the router's rates. */
const SMOOTHING = 0.3;
/**
 * A miss below the average moves it this much: an upper envelope, not a mean, since the bound is on a tail
 * (slo_ttfp_ms is held at p95 by the bench). With the mean (0.3 both ways), tiny-omni at 12 req/s admitted requests
 * whose TTFP p50 was 1.3 s and p95 2.9 s against a 1.5 s bound.
 */
const SMOOTHING_DOWN = 0.05;

/**
 * The estimate's own tail error: a charge learned as an envelope still left the admitted requests' TTFP p95 over the
 * bound (tiny-omni at 2x capacity, 2 cores: p95 1739 ms against 1500; 2026-11-28, bench/README.md). So the ratio of
 * each request's first text / first audio to what was estimated for it at admission is kept over the last requests,
 * and estimates are scaled by its 95th percentile: a request is admitted when 95% of those like it got their first
 * packet within the bound, which holds the admitted requests' p95 within it whatever the estimate's bias.
 */
const CALIBRATION_WINDOW = 64;
const CALIBRATION_MIN_SAMPLES = 16;
const CALIBRATION_QUANTILE = 0.95;
/** One request's ratio counts within these: a stall or a clock oddity must not shut admission for a window. */
const RATIO_BOUNDS = [0.1, 10] as const;

/**
 * A request's own miss and its competitors' (issue 41): the miss of a request that had no competitor (none other before
 * its first packet) is its own time beyond the prediction (a spoken answer's sentence and voice after its first
 * text), not a cost of competition. Charged per competitor, as it was, it made every request before its first packet
 * cost a newcomer a whole request alone: the assistant pipeline's closed loop at c=4 refused 7 of 8 requests on a
 * quiet machine (first audio estimated at 2577 ms against a 2512 ms bound, the one admitted heard in 364 ms), and on
 * a loaded one its first request's cold miss (6.4 s) charged each competitor 6.4 s. So the misses of requests with no
 * competitor teach the own part (the lower median of the last ones: a cold start is outvoted by the next one), and
 * the misses of those with competitors teach, beyond that own part, the cost of each other one.
 */
/** Misses of requests with no competitor kept per kind: their median is the own part. */
const OWN_WINDOW = 16;
/**
 * Until what a competitor adds is measured, it is taken as this share of a request's time alone (admission to first
 * packet of the last requests with no competitor): requests before their first packet share batched steps (on this
 * class of CPU a decode step of 16 requests costs about 8 of one: ~4 ms against ~0.5 ms). Charged a whole request
 * alone each, tiny-omni's c=10 burst was refused 4 of 12 (estimated 1482 ms against the 1000 ms floor; those
 * admitted heard audio within 360 ms). A share of the own part (the miss) instead was no charge at all when the
 * prediction already covered a request alone: a cold first request teaches a slow prefill rate, the next one's miss
 * is below zero, and a burst of 24 on a loaded CI machine was admitted whole, each competitor lowering the estimate.
 */
const UNMEASURED_SHARE = 0.5;

/**
 * Competitors and background (issue 41): a request past its first packet (first audio when it asked for audio, else
 * first text) shares the cores with a newcomer but not its place in line: its steps are the ones in progress that a
 * newcomer waits for at each stage (stepWait.ts, measured per stage now), and the Talker runs first outputs in steps
 * of their own (ArScheduler "first outputs first"). Charged per live request, sixteen long answers made a newcomer
 * 17 competitors' worth; so the learned charge is per request still before its first packet, and the running steps
 * are charged as measured.
 */
/** The steps in progress on a newcomer's way, at admission (ms): to its first text (the entry stage) and audio. */
export interface PathWaitMs {
  readonly ttft: number;
  readonly ttfp: number;
}

/** One routed request, as the learner counts it. */
export interface LiveSample {
  /** Live requests at its admission, itself included. */
  readonly live: number;
  /** Requests before their first packet at its admission, itself included: the ones it competes with. */
  readonly competitors: number;
  /**
   * The most requests before their first packet at once while it waited for its own, itself included: those
   * admitted after it share its steps too (a burst's second request waited as long as its tenth).
   */
  peakCompetitors: number;
  /** Its first packet is audio (it asked for audio), else its first text. */
  readonly wantsAudio: boolean;
  /** The steps in progress on its way when it was admitted (stepWait.ts). */
  readonly pathMs: PathWaitMs;
  /** Its first packet is out (or it ended): it competes no more. */
  firstPacketOut: boolean;
  readonly admittedAtMs: number;
  readonly predictedTtftMs: number;
  /** What admission estimated for it (its prediction plus the charge at its admission); null: nothing learned yet. */
  readonly estimatedMs: { readonly ttft: number | null; readonly ttfp: number | null };
  /** Its first text and first audio were learned from (each once). */
  readonly learned: Record<Kind, boolean>;
  released: boolean;
}

export class LiveCost {
  /** First text and audio of requests admitted alone (AloneTimes.ts). */
  readonly alone = new AloneTimes();
  #live = 0;
  /** Live requests before their first packet (competitors of a newcomer). */
  readonly #waiting = new Set<LiveSample>();
  #typicalPromptTokens: number | null = null;
  /** What each other request before its first packet adds (ms), learned as an upper envelope. */
  readonly #perOtherMs: Record<Kind, number | null> = { ttft: null, ttfp: null };
  /** The misses of the last requests that had no competitor (ms), whose median is a newcomer's own part. */
  readonly #ownMisses: Record<Kind, number[]> = { ttft: [], ttfp: [] };
  /** Their times from admission to first packet (ms), whose median an unmeasured competitor costs a share of. */
  readonly #ownTimes: Record<Kind, number[]> = { ttft: [], ttfp: [] };
  readonly #ratios = { ttft: [] as number[], ttfp: [] as number[] };

  /** Live requests now (routed and not released). */
  get live(): number {
    return this.#live;
  }

  /** A typical prompt's tokens to compute (moving average); null before any request. */
  get typicalPromptTokens(): number | null {
    return this.#typicalPromptTokens;
  }

  /** Live requests before their first packet now. */
  get pending(): number {
    return this.#waiting.size;
  }

  admit(
    promptTokens: number,
    admittedAtMs: number,
    predictedTtftMs: number,
    wantsAudio: boolean,
    pathMs: PathWaitMs,
  ): LiveSample {
    const t = this.#typicalPromptTokens;
    this.#typicalPromptTokens = t === null ? promptTokens : t + SMOOTHING * (promptTokens - t);
    const estimatedMs = {
      ttft: this.estimatedMs(predictedTtftMs, 'ttft', pathMs),
      ttfp: this.estimatedMs(predictedTtftMs, 'ttfp', pathMs),
    };
    this.#live++;
    const competitors = this.#waiting.size + 1;
    const sample: LiveSample = {
      live: this.#live,
      competitors,
      peakCompetitors: competitors,
      wantsAudio,
      pathMs,
      firstPacketOut: false,
      admittedAtMs,
      predictedTtftMs,
      estimatedMs,
      learned: { ttft: false, ttfp: false },
      released: false,
    };
    for (const w of this.#waiting) w.peakCompetitors = Math.max(w.peakCompetitors, competitors);
    this.#waiting.add(sample);
    return sample;
  }

  firstToken(s: LiveSample, atMs: number): void {
    if (this.learnFirst('ttft', s, atMs) && !s.wantsAudio) this.firstPacketOut(s);
  }

  firstAudio(s: LiveSample, atMs: number): void {
    if (this.learnFirst('ttfp', s, atMs)) this.firstPacketOut(s);
  }

  /** Learns from a request's first text or first audio; false (nothing learned) when that one was seen already. */
  private learnFirst(kind: Kind, s: LiveSample, atMs: number): boolean {
    if (s.learned[kind]) return false;
    s.learned[kind] = true;
    this.alone.learn(kind, s.live, atMs - s.admittedAtMs);
    this.learnMiss(kind, s, atMs);
    this.learnRatio(kind, s, atMs);
    return true;
  }

  release(s: LiveSample): void {
    if (s.released) return;
    s.released = true;
    this.#live--;
    this.firstPacketOut(s);
  }

  private firstPacketOut(s: LiveSample): void {
    if (s.firstPacketOut) return;
    s.firstPacketOut = true;
    this.#waiting.delete(s);
  }

  /**
   * What a request admitted now should be charged beyond its prediction and the steps in progress on its way, to its
   * first text or first audio: its own part (what requests with no competitor lately missed by) and, for each request
   * now before its first packet, what each other one added (ms; null: nothing of that kind measured yet). Until a
   * request with competitors is measured, each is taken to cost UNMEASURED_SHARE of a request's time alone (a burst
   * on a server that measured one request must not all be admitted); until one without, the per-competitor charge
   * stands for the own part.
   */
  extraMs(kind: Kind): number | null {
    const own = this.ownMs(kind) ?? this.#perOtherMs[kind];
    if (own === null) return null;
    const perOther = this.#perOtherMs[kind] ?? UNMEASURED_SHARE * (lowerMedian(this.#ownTimes[kind]) ?? own);
    return own + perOther * this.#waiting.size;
  }

  /** The lower median miss of the last requests that had no competitor (ms), or null before one. */
  ownMs(kind: Kind): number | null {
    return lowerMedian(this.#ownMisses[kind]);
  }

  /**
   * A first packet teaches the own part (a request with no competitor) or, beyond the own part, each other one's
   * cost; with no own part measured yet, its competitors (itself included) share its miss equally, as before. The
   * competitors are the most there were while it waited (peakCompetitors), not those at its admission: counted at
   * admission, tiny-omni's sync c=10 burst taught 6 s a competitor (its second request, as slow as the tenth, had
   * one ahead) and refused requests estimated at 58 s that took 8.
   */
  private learnMiss(kind: Kind, s: LiveSample, atMs: number): void {
    const miss = atMs - s.admittedAtMs - s.predictedTtftMs - s.pathMs[kind];
    const own = this.ownMs(kind);
    if (s.peakCompetitors === 1) {
      keepLast(this.#ownMisses[kind], miss);
      keepLast(this.#ownTimes[kind], atMs - s.admittedAtMs);
      return;
    }
    const others = s.peakCompetitors - 1;
    // Never below zero: a competitor does not make a request faster. A request beside others that missed less than
    // the own part (its prediction grown since the own part was learned) taught a negative cost each at first, and
    // a burst after it was admitted whole, each competitor lowering the estimate.
    const perOther = Math.max(0, own === null ? miss / s.peakCompetitors : (miss - own) / others);
    this.#perOtherMs[kind] = envelope(this.#perOtherMs[kind], perOther);
  }

  /**
   * What estimates of this kind are scaled by: the 95th percentile of actual over estimated of the last requests
   * (1 until enough are measured).
   */
  calibration(kind: Kind): number {
    const ratios = this.#ratios[kind];
    if (ratios.length < CALIBRATION_MIN_SAMPLES) return 1;
    const sorted = [...ratios].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil(CALIBRATION_QUANTILE * sorted.length) - 1)];
  }

  /**
   * Admission's estimate of the first text or first audio (ms) of a request predicted at `predictedMs` admitted now:
   * the prediction, the steps in progress on its way (`pathMs`), and the charge for the requests before their first
   * packet, scaled by the calibration; the first audio's is null until a first audio was measured.
   */
  estimate(predictedMs: number, kind: Kind, pathMs: PathWaitMs): number | null {
    const raw = this.estimatedMs(predictedMs, kind, pathMs);
    return raw === null ? null : raw * this.calibration(kind);
  }

  /**
   * The uncalibrated estimate (what the calibration's ratios are taken against): the first text is the prediction
   * until a charge is learned; the first audio is unknown (null) until then.
   */
  private estimatedMs(predictedMs: number, kind: Kind, pathMs: PathWaitMs): number | null {
    const extra = this.extraMs(kind);
    if (extra === null) return kind === 'ttft' ? Math.max(0, predictedMs + pathMs.ttft) : null;
    return Math.max(0, predictedMs + pathMs[kind] + extra);
  }

  private learnRatio(kind: Kind, s: LiveSample, atMs: number): void {
    const estimated = s.estimatedMs[kind];
    if (estimated === null) return;
    const ratio = (atMs - s.admittedAtMs) / Math.max(estimated, 1);
    const ratios = this.#ratios[kind];
    ratios.push(Math.min(RATIO_BOUNDS[1], Math.max(RATIO_BOUNDS[0], ratio)));
    if (ratios.length > CALIBRATION_WINDOW) ratios.shift();
  }
}

type Kind = 'ttft' | 'ttfp';

function envelope(before: number | null, sample: number): number {
  if (before === null) return sample;
  return before + (sample > before ? SMOOTHING : SMOOTHING_DOWN) * (sample - before);
}

/** Appends a sample, keeping the last OWN_WINDOW. */
function keepLast(samples: number[], sample: number): void {
  samples.push(sample);
  if (samples.length > OWN_WINDOW) samples.shift();
}

/** The lower median (a cold start is outvoted by the next sample), or null without samples. */
function lowerMedian(samples: readonly number[]): number | null {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}
