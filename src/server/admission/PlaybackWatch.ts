/**
 * Whether a spoken answer keeps ahead of its playback, as the server hands it out: the audio is taken to play from
 * its first chunk's hand-over, at the speed it plays, as a client's player would (the bench's player does the same,
 * bench/ttfp/metrics.ts). A chunk handed over more than UNDERRUN_MS after what came before it has played out is an
 * underrun: the client heard silence in the middle of the answer. Admission's running limit counts such an answer as
 * late (RequestQueue.underran): under overload the answers beside each other first underran in time, their first audio
 * within its bound (tiny-omni at 4x capacity on a loaded machine: admitted first audio p95 1012 ms, 84% of the
 * answers underran), and an answer that underruns is no good answer.
 */

/** A gap in playback longer than this is an underrun (ms; the bench's threshold). */
export const UNDERRUN_MS = 100;

export class PlaybackWatch {
  /** When the audio handed over so far has finished playing (performance.now() ms); null before any. */
  #playedOutAtMs: number | null = null;
  #underran = false;
  /** The client stopped reading once: what it then missed was its own doing, not the server's load. */
  #clientPaused = false;

  /** `onUnderrun` is called once, at the answer's first underrun. */
  constructor(private readonly onUnderrun: () => void) {}

  /** The answer was paused for its client (it stopped reading): no later gap is held against the server. */
  clientPaused(): void {
    this.#clientPaused = true;
  }

  /** `durationMs` of audio was handed to the client at `atMs`. */
  audio(durationMs: number, atMs = performance.now()): void {
    if (this.#playedOutAtMs === null || atMs > this.#playedOutAtMs) {
      const gapMs = this.#playedOutAtMs === null ? 0 : atMs - this.#playedOutAtMs;
      this.#playedOutAtMs = atMs + durationMs;
      if (gapMs <= UNDERRUN_MS || this.#underran || this.#clientPaused) return;
      this.#underran = true;
      this.onUnderrun();
      return;
    }
    this.#playedOutAtMs += durationMs;
  }
}
