/**
 * What routing's TTFT predictions miss, per live request, for admission on latency (Router.estimate()). The
 * prediction charges the prompt tokens queued on a Thinker at its learned rate; it does not see that on shared
 * cores every live request's decode steps (Thinker, Talker, Code2Wav) slow everyone's first packet, and its rates
 * are learned from first tokens, seconds after the load that slowed them arrived. Measured under overload (tiny-omni
 * at 12 req/s, 2 cores): admitted on the prediction plus how long audio lately followed text, the admitted requests'
 * TTFP p50 was 5.9 s against a 1.5 s bound. So each request's miss (actual first token or first audio, less what was
 * predicted at its admission) is learned per live request at its admission, and a newcomer is charged that for
 * every request live now: the charge rises the moment load arrives, before any of it has been measured.
 */

/** Weight of a new sample (exponential moving average), as the router's rates. */
const SMOOTHING = 0.3;
/**
 * A miss below the average moves it this much: an upper envelope, not a mean, since the bound is on a tail
 * (slo_ttfp_ms is held at p95 by the bench). With the mean (0.3 both ways), tiny-omni at 12 req/s admitted requests
 * whose TTFP p50 was 1.3 s and p95 2.9 s against a 1.5 s bound.
 */
const SMOOTHING_DOWN = 0.05;

/** One routed request, as the learner counts it. */
export interface LiveSample {
  /** Live requests at its admission, itself included. */
  readonly live: number;
  readonly admittedAtMs: number;
  readonly predictedTtftMs: number;
  ttftLearned: boolean;
  ttfpLearned: boolean;
  released: boolean;
}

export class LiveCost {
  #live = 0;
  #typicalPromptTokens: number | null = null;
  #ttftPerLiveMs: number | null = null;
  #ttfpPerLiveMs: number | null = null;

  /** Live requests now (routed and not released). */
  get live(): number {
    return this.#live;
  }

  /** A typical prompt's tokens to compute (moving average); null before any request. */
  get typicalPromptTokens(): number | null {
    return this.#typicalPromptTokens;
  }

  admit(promptTokens: number, admittedAtMs: number, predictedTtftMs: number): LiveSample {
    const t = this.#typicalPromptTokens;
    this.#typicalPromptTokens = t === null ? promptTokens : t + SMOOTHING * (promptTokens - t);
    this.#live++;
    return { live: this.#live, admittedAtMs, predictedTtftMs, ttftLearned: false, ttfpLearned: false, released: false };
  }

  firstToken(s: LiveSample, atMs: number): void {
    if (s.ttftLearned) return;
    s.ttftLearned = true;
    this.#ttftPerLiveMs = envelope(this.#ttftPerLiveMs, missPerLive(s, atMs));
  }

  firstAudio(s: LiveSample, atMs: number): void {
    if (s.ttfpLearned) return;
    s.ttfpLearned = true;
    this.#ttfpPerLiveMs = envelope(this.#ttfpPerLiveMs, missPerLive(s, atMs));
  }

  release(s: LiveSample): void {
    if (s.released) return;
    s.released = true;
    this.#live--;
  }

  /**
   * What a request admitted now should be charged beyond its prediction, to its first text or first audio (ms;
   * null: nothing of that kind measured yet).
   */
  extraMs(kind: 'ttft' | 'ttfp'): number | null {
    const perLive = kind === 'ttft' ? this.#ttftPerLiveMs : this.#ttfpPerLiveMs;
    return perLive === null ? null : perLive * (this.#live + 1);
  }
}

function missPerLive(s: LiveSample, atMs: number): number {
  return (atMs - s.admittedAtMs - s.predictedTtftMs) / s.live;
}

function envelope(before: number | null, sample: number): number {
  if (before === null) return sample;
  return before + (sample > before ? SMOOTHING : SMOOTHING_DOWN) * (sample - before);
}
