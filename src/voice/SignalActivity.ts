/**
 * Where the signal in a VAD window stops being louder than the room: the end-of-speech timestamp's fine part.
 *
 * Silero decides WHETHER speech ended (TurnDetector's hysteresis over its probabilities); this only dates it
 * inside the windows Silero was still rating as speech. Silero's probability lags the signal (its recurrent state
 * carries the last phoneme into the next window or two), and its windows are 32 ms, so the fall of the probability
 * alone puts the end 0-100 ms late (bench/README.md, "where the VAD ends a turn"); every ms of that is a ms the
 * user waits past silence_duration_ms for the answer.
 *
 * Per 32 ms window, split into 4 ms sub-frames: the window's code is the number of sub-frames up to and including
 * the last one whose power is ACTIVITY_DB over the room's noise floor (0: none is), or UNKNOWN_ACTIVITY while no
 * floor has been measured yet. The floor is a minimum tracker over the windows Silero rates as non-speech (the
 * quietest sub-frame of each), rising slowly so a room that gets louder is followed; digital silence is floored at
 * MIN_FLOOR_DBFS so that dither and codec noise in a silent stream do not count as speech.
 *
 * Pure (no model, no I/O): the VAD worker feeds it each window's samples with the probability Silero gave them.
 */

/** Samples per sub-frame at 16 kHz: 4 ms. */
export const SUBFRAME_SAMPLES = 64;
/** The code of a window rated before any noise floor was measured. */
export const UNKNOWN_ACTIVITY = 255;
/** A sub-frame is active when its power is this far over the noise floor. */
const ACTIVITY_DB = 10;
/** The floor never goes below this (digital silence). */
const MIN_FLOOR_DBFS = -65;
/** Below this probability a window counts as room noise for the floor. */
const NOISE_PROBABILITY = 0.3;
/** Non-speech windows needed before the floor is trusted. */
const FLOOR_WINDOWS = 3;
/** How fast the floor may rise per non-speech window (dB); it falls at once. */
const FLOOR_RISE_DB = 0.5;

const dbToPower = (db: number) => 10 ** (db / 10);
const ACTIVITY_RATIO = dbToPower(ACTIVITY_DB);
const MIN_FLOOR = dbToPower(MIN_FLOOR_DBFS);
const FLOOR_RISE = dbToPower(FLOOR_RISE_DB);

export class SignalActivity {
  /** Mean power of the quietest sub-frame in the room, or null until measured. */
  #floor: number | null = null;
  #noiseWindows = 0;

  /**
   * Codes `window` (one VAD window of samples in [-1, 1], a whole number of sub-frames) against the floor as it
   * stood before it, then lets the window update the floor if Silero rated it non-speech.
   */
  next(window: Float32Array, probability: number): number {
    const subframes = Math.floor(window.length / SUBFRAME_SAMPLES);
    let lastActive = 0;
    let quietest = Infinity;
    const threshold = this.#noiseWindows >= FLOOR_WINDOWS ? this.#floor! * ACTIVITY_RATIO : null;
    for (let s = 0; s < subframes; s++) {
      let sum = 0;
      for (let i = s * SUBFRAME_SAMPLES; i < (s + 1) * SUBFRAME_SAMPLES; i++) sum += window[i] * window[i];
      const power = sum / SUBFRAME_SAMPLES;
      quietest = Math.min(quietest, power);
      if (threshold !== null && power > threshold) lastActive = s + 1;
    }
    if (probability < NOISE_PROBABILITY) {
      const room = Math.max(quietest, MIN_FLOOR);
      this.#floor = this.#floor === null ? room : Math.min(room, this.#floor * FLOOR_RISE);
      this.#noiseWindows++;
    }
    return threshold === null ? UNKNOWN_ACTIVITY : lastActive;
  }

  reset(): void {
    this.#floor = null;
    this.#noiseWindows = 0;
  }
}
