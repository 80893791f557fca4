/**
 * Band-limited sample-rate conversion: a Kaiser-windowed sinc evaluated at each output instant, with the
 * weights precomputed per phase (polyphase). For a ratio toHz/fromHz = L/M in lowest terms, output n sits
 * at input time n*M/L, whose fractional part is one of L phases; each phase's taps are built once.
 *
 * The cutoff is the lower Nyquist of the two rates (times ROLLOFF), so downsampling removes what would
 * alias instead of folding it back. Each phase is normalised to unit DC gain. When L is large (odd rates
 * such as 44101 Hz) the phase is rounded to one of MAX_PHASES, a timing error below 1/(2*MAX_PHASES) of a
 * sample, far under the filter's own error.
 */

const ZERO_CROSSINGS = 16; // sinc lobes on each side at the cutoff: ~-80 dB stopband with KAISER_BETA
const KAISER_BETA = 8.6;
const ROLLOFF = 0.95; // cutoff as a fraction of the lower Nyquist: room for the transition band
const MAX_PHASES = 1024;

export function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Modified Bessel function of the first kind, order 0 (power series; converges fast for the betas used). */
export function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 64; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

interface PhaseTable {
  readonly numPhases: number;
  /** Taps per phase; tap j of a phase multiplies input sample base + j - halfTaps + 1. */
  readonly numTaps: number;
  readonly halfTaps: number;
  readonly weights: Float64Array; // [numPhases][numTaps]
}

function buildTable(fromHz: number, toHz: number, numPhases: number): PhaseTable {
  const scale = Math.min(1, toHz / fromHz) * ROLLOFF; // cutoff in cycles per input sample, * 2
  const halfWidth = ZERO_CROSSINGS / scale; // window half-width, in input samples
  const halfTaps = Math.ceil(halfWidth) + 1;
  const numTaps = 2 * halfTaps;
  const weights = new Float64Array(numPhases * numTaps);
  const i0Beta = besselI0(KAISER_BETA);
  for (let p = 0; p < numPhases; p++) {
    const frac = p / numPhases;
    let sum = 0;
    for (let j = 0; j < numTaps; j++) {
      const dist = frac - (j - halfTaps + 1); // output instant minus tap instant, in input samples
      const r = dist / halfWidth;
      if (Math.abs(r) >= 1) continue;
      const x = Math.PI * scale * dist;
      const sinc = x === 0 ? 1 : Math.sin(x) / x;
      const w = (sinc * besselI0(KAISER_BETA * Math.sqrt(1 - r * r))) / i0Beta;
      weights[p * numTaps + j] = w;
      sum += w;
    }
    for (let j = 0; j < numTaps; j++) weights[p * numTaps + j] /= sum;
  }
  return { numPhases, numTaps, halfTaps, weights };
}

const tables = new Map<string, PhaseTable>();

function tableFor(fromHz: number, toHz: number, numPhases: number): PhaseTable {
  const key = `${fromHz}/${toHz}`;
  let table = tables.get(key);
  if (!table) {
    table = buildTable(fromHz, toHz, numPhases);
    tables.set(key, table);
  }
  return table;
}

/** Number of output samples: one for every output instant inside the input, ceil(n * to / from). */
export function resampledLength(numSamples: number, fromHz: number, toHz: number): number {
  const g = gcd(fromHz, toHz);
  return Math.ceil((numSamples * (toHz / g)) / (fromHz / g));
}

export function resample(samples: Float32Array, fromHz: number, toHz: number): Float32Array {
  if (!Number.isInteger(fromHz) || !Number.isInteger(toHz) || fromHz <= 0 || toHz <= 0) {
    throw new RangeError(`sample rates must be positive integers, got ${fromHz} -> ${toHz}`);
  }
  if (fromHz === toHz) return samples.slice();
  const g = gcd(fromHz, toHz);
  const up = toHz / g;
  const down = fromHz / g;
  const { numPhases, numTaps, halfTaps, weights } = tableFor(fromHz, toHz, Math.min(up, MAX_PHASES));
  const n = samples.length;
  const out = new Float32Array(resampledLength(n, fromHz, toHz));
  for (let i = 0; i < out.length; i++) {
    const pos = i * down; // output instant * up, exact in integers (< 2^53 for any real recording)
    let base = Math.floor(pos / up);
    let phase = numPhases === up ? pos - base * up : Math.round(((pos - base * up) * numPhases) / up);
    if (phase === numPhases) {
      phase = 0;
      base += 1;
    }
    const first = base - halfTaps + 1;
    const row = phase * numTaps;
    let acc = 0;
    // Samples outside the input are silence: clip the tap range instead of testing every tap.
    const jFrom = Math.max(0, -first);
    const jTo = Math.min(numTaps, n - first);
    for (let j = jFrom; j < jTo; j++) acc += weights[row + j] * samples[first + j];
    out[i] = acc;
  }
  return out;
}
