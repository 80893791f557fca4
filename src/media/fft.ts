/**
 * A mixed-radix complex FFT for any length whose prime factors are small. Whisper's front end uses a
 * 400-point transform (25 ms at 16 kHz = 4 * 4 * 5 * 5), which radix-2 libraries cannot do without
 * zero-padding to 512, and zero-padding would move every bin off Whisper's 40 Hz grid.
 *
 * Decimation in time, done iteratively: the input is gathered in digit-reversed order once, then each
 * level combines p sub-transforms of length m into one of length p*m: X[k + r m] = sum_q W_p^(q r) (W_n^(q k) Y_q[k]).
 * Twiddles and the small p-point DFT matrices are precomputed per level. O(n * sum of factors); a large
 * prime factor still works, only slower.
 */

function factorize(n: number): number[] {
  const factors: number[] = [];
  for (const p of [4, 2, 3, 5]) {
    while (n % p === 0) {
      factors.push(p);
      n /= p;
    }
  }
  for (let p = 7; n > 1; p += 2) {
    while (n % p === 0) {
      factors.push(p);
      n /= p;
    }
  }
  return factors;
}

const C1 = Math.cos((2 * Math.PI) / 5);
const C2 = Math.cos((4 * Math.PI) / 5);
const S1 = Math.sin((2 * Math.PI) / 5);
const S2 = Math.sin((4 * Math.PI) / 5);

interface Level {
  readonly p: number;
  /** Sub-transform length; this level builds transforms of length p * m. */
  readonly m: number;
  /** W_{p m}^(q k) for q < p, k < m: [q * m + k]. */
  readonly twRe: Float64Array;
  readonly twIm: Float64Array;
  /** W_p^(q r): [q * p + r]. */
  readonly dftRe: Float64Array;
  readonly dftIm: Float64Array;
}

export class FftPlan {
  /** out-of-place gather: position i of the first level's input reads input[order[i]]. */
  private readonly order: Int32Array;
  private readonly levels: Level[] = [];
  private readonly sRe: Float64Array;
  private readonly sIm: Float64Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`FFT size must be a positive integer, got ${size}`);
    const factors = factorize(size);
    this.order = new Int32Array(size);
    // Sub-transform q of a length-n block takes every p-th element starting at q, recursively.
    const gather = (n: number, fi: number, inOff: number, stride: number, outOff: number): void => {
      if (n === 1) {
        this.order[outOff] = inOff;
        return;
      }
      const p = factors[fi];
      for (let q = 0; q < p; q++) gather(n / p, fi + 1, inOff + q * stride, stride * p, outOff + q * (n / p));
    };
    gather(size, 0, 0, 1, 0);
    // Levels bottom-up: the last factor combines length-1 transforms.
    let m = 1;
    for (let fi = factors.length - 1; fi >= 0; fi--) {
      const p = factors[fi];
      const n = p * m;
      const twRe = new Float64Array(p * m);
      const twIm = new Float64Array(p * m);
      for (let q = 0; q < p; q++) {
        for (let k = 0; k < m; k++) {
          twRe[q * m + k] = Math.cos((-2 * Math.PI * q * k) / n);
          twIm[q * m + k] = Math.sin((-2 * Math.PI * q * k) / n);
        }
      }
      const dftRe = new Float64Array(p * p);
      const dftIm = new Float64Array(p * p);
      for (let q = 0; q < p; q++) {
        for (let r = 0; r < p; r++) {
          dftRe[q * p + r] = Math.cos((-2 * Math.PI * ((q * r) % p)) / p);
          dftIm[q * p + r] = Math.sin((-2 * Math.PI * ((q * r) % p)) / p);
        }
      }
      this.levels.push({ p, m, twRe, twIm, dftRe, dftIm });
      m = n;
    }
    const maxP = Math.max(1, ...factors);
    this.sRe = new Float64Array(maxP);
    this.sIm = new Float64Array(maxP);
  }

  /**
   * Forward DFT (e^{-2 pi i k t / n}) of (inRe, inIm) into (outRe, outIm), all of length size. Inputs are not modified.
   */
  transform(inRe: ArrayLike<number>, inIm: ArrayLike<number> | null, outRe: Float64Array, outIm: Float64Array): void {
    const n = this.size;
    for (let i = 0; i < n; i++) {
      const j = this.order[i];
      outRe[i] = inRe[j];
      outIm[i] = inIm ? inIm[j] : 0;
    }
    for (const level of this.levels) {
      if (level.p === 2) this.radix2(level, outRe, outIm);
      else if (level.p === 4) this.radix4(level, outRe, outIm);
      else if (level.p === 5) this.radix5(level, outRe, outIm);
      else this.generic(level, outRe, outIm);
    }
  }

  /** Loads the p twiddled inputs of butterfly (block, k) into the scratch arrays. */
  private load(
    p: number,
    m: number,
    base: number,
    k: number,
    twRe: Float64Array,
    twIm: Float64Array,
    re: Float64Array,
    im: Float64Array,
  ): void {
    for (let q = 0; q < p; q++) {
      const idx = base + q * m;
      const c = twRe[q * m + k];
      const s = twIm[q * m + k];
      this.sRe[q] = re[idx] * c - im[idx] * s;
      this.sIm[q] = re[idx] * s + im[idx] * c;
    }
  }

  private radix2({ m, twRe, twIm }: Level, re: Float64Array, im: Float64Array): void {
    for (let block = 0; block < this.size; block += 2 * m) {
      for (let k = 0; k < m; k++) {
        const a = block + k;
        const b = a + m;
        const c = twRe[m + k];
        const s = twIm[m + k];
        const tR = re[b] * c - im[b] * s;
        const tI = re[b] * s + im[b] * c;
        re[b] = re[a] - tR;
        im[b] = im[a] - tI;
        re[a] += tR;
        im[a] += tI;
      }
    }
  }

  // Radix 4: with a = t0 + t2, b = t0 - t2, c = t1 + t3, d = t1 - t3: X0 = a + c, X1 = b - i d, X2 = a - c, X3 = b + i
  // d.
  private radix4({ m, twRe, twIm }: Level, re: Float64Array, im: Float64Array): void {
    const { sRe, sIm } = this;
    for (let block = 0; block < this.size; block += 4 * m) {
      for (let k = 0; k < m; k++) {
        this.load(4, m, block + k, k, twRe, twIm, re, im);
        const aR = sRe[0] + sRe[2],
          aI = sIm[0] + sIm[2];
        const bR = sRe[0] - sRe[2],
          bI = sIm[0] - sIm[2];
        const cR = sRe[1] + sRe[3],
          cI = sIm[1] + sIm[3];
        const dR = sRe[1] - sRe[3],
          dI = sIm[1] - sIm[3];
        const o = block + k;
        re[o] = aR + cR;
        im[o] = aI + cI;
        re[o + m] = bR + dI;
        im[o + m] = bI - dR;
        re[o + 2 * m] = aR - cR;
        im[o + 2 * m] = aI - cI;
        re[o + 3 * m] = bR - dI;
        im[o + 3 * m] = bI + dR;
      }
    }
  }

  // Radix 5 with a1 = t1 + t4, b1 = t1 - t4, a2 = t2 + t3, b2 = t2 - t3 (theta = 2 pi / 5):
  // X1,4 = t0 + c1 a1 + c2 a2 -/+ i (s1 b1 + s2 b2); X2,3 = t0 + c2 a1 + c1 a2 -/+ i (s2 b1 - s1 b2).
  private radix5({ m, twRe, twIm }: Level, re: Float64Array, im: Float64Array): void {
    const { sRe, sIm } = this;
    for (let block = 0; block < this.size; block += 5 * m) {
      for (let k = 0; k < m; k++) {
        this.load(5, m, block + k, k, twRe, twIm, re, im);
        const a1R = sRe[1] + sRe[4],
          a1I = sIm[1] + sIm[4];
        const b1R = sRe[1] - sRe[4],
          b1I = sIm[1] - sIm[4];
        const a2R = sRe[2] + sRe[3],
          a2I = sIm[2] + sIm[3];
        const b2R = sRe[2] - sRe[3],
          b2I = sIm[2] - sIm[3];
        const o = block + k;
        re[o] = sRe[0] + a1R + a2R;
        im[o] = sIm[0] + a1I + a2I;
        const pR = sRe[0] + C1 * a1R + C2 * a2R,
          pI = sIm[0] + C1 * a1I + C2 * a2I;
        const qR = S1 * b1R + S2 * b2R,
          qI = S1 * b1I + S2 * b2I;
        re[o + m] = pR + qI;
        im[o + m] = pI - qR;
        re[o + 4 * m] = pR - qI;
        im[o + 4 * m] = pI + qR;
        const uR = sRe[0] + C2 * a1R + C1 * a2R,
          uI = sIm[0] + C2 * a1I + C1 * a2I;
        const vR = S2 * b1R - S1 * b2R,
          vI = S2 * b1I - S1 * b2I;
        re[o + 2 * m] = uR + vI;
        im[o + 2 * m] = uI - vR;
        re[o + 3 * m] = uR - vI;
        im[o + 3 * m] = uI + vR;
      }
    }
  }

  private generic({ p, m, twRe, twIm, dftRe, dftIm }: Level, re: Float64Array, im: Float64Array): void {
    const { sRe, sIm } = this;
    for (let block = 0; block < this.size; block += p * m) {
      for (let k = 0; k < m; k++) {
        this.load(p, m, block + k, k, twRe, twIm, re, im);
        for (let r = 0; r < p; r++) {
          let accR = 0;
          let accI = 0;
          for (let q = 0; q < p; q++) {
            const c = dftRe[q * p + r];
            const s = dftIm[q * p + r];
            accR += sRe[q] * c - sIm[q] * s;
            accI += sRe[q] * s + sIm[q] * c;
          }
          re[block + k + r * m] = accR;
          im[block + k + r * m] = accI;
        }
      }
    }
  }
}

/**
 * The DFT of a real signal of even length n through one complex FFT of length n/2: pack even samples as
 * real parts and odd ones as imaginary parts, transform, then untangle the two spectra. Returns bins
 * 0..n/2 (the rest mirror them).
 */
export class RealFftPlan {
  private readonly half: FftPlan;
  private readonly zRe: Float64Array;
  private readonly zIm: Float64Array;
  private readonly packRe: Float64Array;
  private readonly packIm: Float64Array;
  private readonly wRe: Float64Array;
  private readonly wIm: Float64Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 2 || size % 2 !== 0)
      throw new RangeError(`real FFT size must be even, got ${size}`);
    const h = size / 2;
    this.half = new FftPlan(h);
    this.zRe = new Float64Array(h);
    this.zIm = new Float64Array(h);
    this.packRe = new Float64Array(h);
    this.packIm = new Float64Array(h);
    this.wRe = Float64Array.from({ length: h + 1 }, (_, k) => Math.cos((-2 * Math.PI * k) / size));
    this.wIm = Float64Array.from({ length: h + 1 }, (_, k) => Math.sin((-2 * Math.PI * k) / size));
  }

  /** outRe/outIm receive bins 0..size/2 (length >= size/2 + 1). */
  transform(input: ArrayLike<number>, outRe: Float64Array, outIm: Float64Array): void {
    const h = this.size / 2;
    for (let i = 0; i < h; i++) {
      this.packRe[i] = input[2 * i];
      this.packIm[i] = input[2 * i + 1];
    }
    const { zRe, zIm, wRe, wIm } = this;
    this.half.transform(this.packRe, this.packIm, zRe, zIm);
    for (let k = 0; k <= h; k++) {
      // E[k] = (Z[k] + conj Z[h-k]) / 2 (even samples), O[k] = (Z[k] - conj Z[h-k]) / 2i (odd samples).
      const a = k % h;
      const b = (h - k) % h;
      const eR = (zRe[a] + zRe[b]) / 2;
      const eI = (zIm[a] - zIm[b]) / 2;
      const oR = (zIm[a] + zIm[b]) / 2;
      const oI = -(zRe[a] - zRe[b]) / 2;
      // X[k] = E[k] + W_n^k O[k]
      outRe[k] = eR + wRe[k] * oR - wIm[k] * oI;
      outIm[k] = eI + wRe[k] * oI + wIm[k] * oR;
    }
  }
}
