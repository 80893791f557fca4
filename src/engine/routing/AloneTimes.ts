/**
 * What a request takes with the server to itself: the first text and first audio of requests admitted while no other
 * was live, from admission. Admission's measured default bound (src/server/admission/measuredSlo.ts) is a multiple
 * of it, so it suits the pipeline and the machine it runs on (a loaded machine's requests alone are slower too)
 * instead of a fixed figure.
 */

/** Requests alone at admission kept per kind: the median of these is the figure. */
const WINDOW = 16;
/** Fewer than this measured: no figure yet (a process's first requests are slow; one is no measure). */
const MIN_SAMPLES = 3;

type Kind = 'ttft' | 'ttfp';

export class AloneTimes {
  readonly #samples: Record<Kind, number[]> = { ttft: [], ttfp: [] };

  /** A request admitted alone (`live` 1 at its admission, itself included) took `ms` to its first text or audio. */
  learn(kind: Kind, live: number, ms: number): void {
    if (live !== 1 || !(ms >= 0)) return;
    const samples = this.#samples[kind];
    samples.push(ms);
    if (samples.length > WINDOW) samples.shift();
  }

  /** The median of the last requests alone (ms), or null until MIN_SAMPLES were measured. */
  ms(kind: Kind): number | null {
    const samples = this.#samples[kind];
    if (samples.length < MIN_SAMPLES) return null;
    const sorted = [...samples].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }
}
