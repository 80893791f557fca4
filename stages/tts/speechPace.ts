/**
 * What a tts stage has measured of its voice (for the lead rule, lead.ts, and the batching of a step): the synthesis
 * cost per row position of a run (rows x longest row, smoothed over runs: the machine's load moves it), phoneme ids
 * per character of text and milliseconds of audio per id (totals). Before the first run no cost is known.
 */

/** How fast the measured cost per position follows the latest run. */
const COST_SMOOTHING = 0.3;

export class SpeechPace {
  /** Milliseconds per row position of a run (rows x longest row), smoothed; null: no run yet. */
  private msPerPosition: number | null = null;
  private chars = 0;
  private ids = 0;
  private idsSpoken = 0;
  private audioMs = 0;

  /** A run of rows of these lengths took `ms`. */
  measureRun(lengths: readonly number[], ms: number): void {
    if (lengths.length === 0) return;
    const perPosition = ms / (lengths.length * Math.max(...lengths));
    this.msPerPosition =
      this.msPerPosition === null
        ? perPosition
        : this.msPerPosition + COST_SMOOTHING * (perPosition - this.msPerPosition);
  }

  /** A phrase of `chars` characters became `ids` phoneme ids. */
  countPhrase(chars: number, ids: number): void {
    this.chars += chars;
    this.ids += ids;
  }

  /** `ids` phoneme ids gave `audioMs` of audio. */
  countAudio(ids: number, audioMs: number): void {
    this.idsSpoken += ids;
    this.audioMs += audioMs;
  }

  /** The run's cost of a row of `positions`, batched with `rows - 1` others no longer than it. */
  costMs(positions: number, rows = 1): number | null {
    return this.msPerPosition === null ? null : this.msPerPosition * positions * rows;
  }

  /** Phoneme ids of `chars` characters of text (0 before any phrase). */
  idsOf(chars: number): number {
    return this.chars === 0 ? 0 : (chars * this.ids) / this.chars;
  }

  /** Audio of `ids` phoneme ids (0 before any audio: no runway is counted on). */
  audioMsOf(ids: number): number {
    return this.idsSpoken === 0 ? 0 : (ids * this.audioMs) / this.idsSpoken;
  }
}
