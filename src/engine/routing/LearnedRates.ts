/**
 * A rate main learns of each instance from what comes back to it (a Thinker's prefill tokens per second, an
 * encoder's seconds per row): no stage reports its own. Kept as an exponential moving average per key, so a few
 * requests move a rate and one outlier does not. A sample that is not a positive finite number teaches nothing: a
 * rate is never zero, negative or NaN, since chooseRoute divides by a Thinker's and multiplies rows by an encoder's.
 */

/** Weight of a new sample: a few requests move a rate, one outlier does not. */
const RATE_SMOOTHING = 0.3;

export class LearnedRates {
  readonly #rates = new Map<string, number>();

  /** The rate learned under `key`, or null until a sample taught one. */
  get(key: string): number | null {
    return this.#rates.get(key) ?? null;
  }

  learn(key: string, sample: number): void {
    if (!Number.isFinite(sample) || sample <= 0) return;
    const before = this.#rates.get(key);
    this.#rates.set(key, before === undefined ? sample : before + RATE_SMOOTHING * (sample - before));
  }
}
