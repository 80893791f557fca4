/**
 * Open-loop arrival times, as vLLM's `benchmark_serving` draws them: the gap before each request is drawn from a
 * gamma distribution of shape `burstiness` and mean 1 / rate. Shape 1 is the exponential (a Poisson process);
 * below 1 the arrivals bunch into bursts, above 1 they grow more regular. The variance of a gap is
 * 1 / (burstiness * rate^2) whatever the shape.
 *
 * Pure and seeded: the same (rate, burstiness, seed) gives the same gaps on every machine, so two modes (or two
 * runs) are offered exactly the same load.
 */
import { seededRandom } from '../prompts.ts';

export interface ArrivalOptions {
  /** Requests per second, > 0. */
  readonly ratePerS: number;
  /** Gamma shape, > 0 (1 = Poisson). */
  readonly burstiness: number;
  readonly seed: number;
}

/** Standard normal draws from uniform ones (Box-Muller; the second value of each pair is kept for the next call). */
function normalFrom(random: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    // 1 - random() is in (0, 1]: log(0) would be -Infinity.
    const r = Math.sqrt(-2 * Math.log(1 - random()));
    const theta = 2 * Math.PI * random();
    spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  };
}

/**
 * Gamma(shape, 1) draws by Marsaglia and Tsang (2000); a shape below 1 draws Gamma(shape + 1) and scales it by
 * U^(1/shape), the method's own reduction (numpy does the same).
 */
export function gammaSampler(shape: number, random: () => number): () => number {
  if (!(shape > 0) || !Number.isFinite(shape)) throw new RangeError(`gamma shape must be > 0, got ${shape}`);
  const normal = normalFrom(random);
  const boosted = shape < 1;
  const d = (boosted ? shape + 1 : shape) - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  return () => {
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = 1 - random();
      if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) {
        const g = d * v;
        return boosted ? g * (1 - random()) ** (1 / shape) : g;
      }
    }
  };
}

/** An endless stream of gaps in ms between consecutive arrivals (the first gap is before the first request). */
export function arrivalGapsMs(o: ArrivalOptions): () => number {
  if (!(o.ratePerS > 0) || !Number.isFinite(o.ratePerS))
    throw new RangeError(`request rate must be > 0 req/s, got ${o.ratePerS}`);
  if (!(o.burstiness > 0) || !Number.isFinite(o.burstiness))
    throw new RangeError(`burstiness must be > 0, got ${o.burstiness}`);
  const gamma = gammaSampler(o.burstiness, seededRandom(o.seed));
  // Gamma(shape B, scale theta) has mean B * theta: theta = 1 / (B * rate) gives the mean gap 1 / rate.
  const scaleMs = 1000 / (o.burstiness * o.ratePerS);
  return () => gamma() * scaleMs;
}

export interface ArrivalPlan {
  /** Send times in ms from the start of the run, ascending. */
  readonly atMs: readonly number[];
  /** The span the load was offered over: --duration, or the last arrival (N gaps) with --num-prompts. */
  readonly windowMs: number;
}

/** Arrivals within the first `durationMs`, or exactly `count` of them (one of the two). */
export function planArrivals(
  o: ArrivalOptions & ({ readonly durationMs: number } | { readonly count: number }),
): ArrivalPlan {
  const gap = arrivalGapsMs(o);
  const atMs: number[] = [];
  let t = 0;
  if ('durationMs' in o) {
    for (t += gap(); t < o.durationMs; t += gap()) atMs.push(t);
    return { atMs, windowMs: o.durationMs };
  }
  for (let i = 0; i < o.count; i++) {
    t += gap();
    atMs.push(t);
  }
  return { atMs, windowMs: t };
}
