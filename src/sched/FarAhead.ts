/**
 * Which answers' listeners are far enough ahead for their steps to wait (first audio first, speaking slices: issue
 * 41 item 5), with hysteresis. Pure: the stage passes each answer's lead, the audio its listener has buffered beyond
 * what the stage's next output for it takes (TalkerCore, AudioStageCore).
 *
 * The lead of an answer near the floor (HOLD_MIN_AHEAD_MS) moves by about a step's time each step, up when the answer
 * runs, down while it waits; tested against the floor alone it crossed it in and out step after step. Each flip
 * changed the Talker's batch (an answer that may not wait runs in every step beside one slice group, one that may runs
 * only with its group), and every batch that changes is repacked: in loaded runs with seventeen long answers the
 * Talker alternated steps of sixteen with steps of 2-14 rows, every one repacked, most of the 0.45-0.68 of steps
 * repacked that was left (bench/NOTES.md, "Seat turns that keep a batch"). So an answer becomes far ahead at the
 * floor plus HOLD_HYSTERESIS_MS and stays so until it falls below the floor: the floor still holds at every test,
 * and a flip takes a trend of a few steps, not one step's jitter.
 */
import { HOLD_MIN_AHEAD_MS } from './FirstAudioFirst.ts';

/**
 * How far above HOLD_MIN_AHEAD_MS an answer's lead must be for it to become far ahead (ms): a few steps' jitter of the
 * lead (a Talker step of sixteen takes 20-150 ms under load), and a third of the floor, so the answers it keeps out of
 * the holds and slices a little longer still have their listeners more than the floor ahead when they enter.
 */
export const HOLD_HYSTERESIS_MS = 250;

export class FarAhead {
  /** Answers far ahead at their last test. */
  private readonly far = new Set<string>();

  constructor(
    private readonly floorMs = HOLD_MIN_AHEAD_MS,
    private readonly hysteresisMs = HOLD_HYSTERESIS_MS,
  ) {}

  /**
   * Whether the answer's listener is far ahead now: its lead (ms; null: not known, never far) is at least the floor,
   * and at least the floor plus the hysteresis unless it was far ahead at its last test.
   */
  test(requestId: string, leadMs: number | null): boolean {
    const neededMs = this.floorMs + (this.far.has(requestId) ? 0 : this.hysteresisMs);
    const far = leadMs !== null && leadMs >= neededMs;
    if (far) this.far.add(requestId);
    else this.far.delete(requestId);
    return far;
  }

  /** The answer left the stage. */
  removed(requestId: string): void {
    this.far.delete(requestId);
  }
}
