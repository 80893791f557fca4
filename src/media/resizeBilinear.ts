/**
 * Separable bilinear (triangle filter) resize. When shrinking, the triangle is widened by the scale factor
 * so every source pixel contributes (what Pillow's BILINEAR does); a plain 2-tap bilinear would sample a
 * 4000 px photo at 224 points and alias badly. Pixel centres are aligned (half-pixel convention).
 */
import type { RgbImage } from './image.ts';

interface Taps {
  /** First source index of each output position. */
  readonly start: Int32Array;
  readonly count: Int32Array;
  /** [outSize][maxTaps] normalised weights. */
  readonly weights: Float32Array;
  readonly maxTaps: number;
}

function taps(inSize: number, outSize: number): Taps {
  const scale = inSize / outSize;
  const support = Math.max(1, scale); // triangle half-width in source pixels
  const maxTaps = Math.ceil(2 * support) + 3; // covers every j with a non-zero weight from floor(center - support) on
  const start = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Float32Array(outSize * maxTaps);
  for (let i = 0; i < outSize; i++) {
    const center = (i + 0.5) * scale; // in source pixel units, edges at integers
    const lo = Math.max(0, Math.floor(center - support));
    const hi = Math.min(inSize, Math.ceil(center + support));
    let sum = 0;
    for (let j = lo; j < hi && j - lo < maxTaps; j++) {
      const w = Math.max(0, 1 - Math.abs((j + 0.5 - center) / support));
      weights[i * maxTaps + (j - lo)] = w;
      sum += w;
    }
    const n = Math.min(hi - lo, maxTaps);
    // sum > 0 always: the source pixel under the centre has weight > 0.
    for (let k = 0; k < n; k++) weights[i * maxTaps + k] /= sum;
    start[i] = lo;
    count[i] = n;
  }
  return { start, count, weights, maxTaps };
}

/** Returns [outHeight][outWidth][3] floats in [0, 255]. */
export function resizeBilinear(image: RgbImage, outWidth: number, outHeight: number): Float32Array {
  const { width: inW, height: inH, data } = image;
  const hx = taps(inW, outWidth);
  const hy = taps(inH, outHeight);
  // Horizontal pass: [inH][outW][3].
  const mid = new Float32Array(inH * outWidth * 3);
  for (let y = 0; y < inH; y++) {
    for (let x = 0; x < outWidth; x++) {
      let r = 0;
      let g = 0;
      let b = 0;
      const row = x * hx.maxTaps;
      for (let k = 0; k < hx.count[x]; k++) {
        const w = hx.weights[row + k];
        const src = (y * inW + hx.start[x] + k) * 3;
        r += w * data[src];
        g += w * data[src + 1];
        b += w * data[src + 2];
      }
      const dst = (y * outWidth + x) * 3;
      mid[dst] = r;
      mid[dst + 1] = g;
      mid[dst + 2] = b;
    }
  }
  // Vertical pass: [outH][outW][3].
  const out = new Float32Array(outHeight * outWidth * 3);
  const rowLen = outWidth * 3;
  for (let y = 0; y < outHeight; y++) {
    const row = y * hy.maxTaps;
    const dst = y * rowLen;
    for (let k = 0; k < hy.count[y]; k++) {
      const w = hy.weights[row + k];
      const src = (hy.start[y] + k) * rowLen;
      for (let i = 0; i < rowLen; i++) out[dst + i] += w * mid[src + i];
    }
  }
  return out;
}
