/**
 * The generator's 4-bit projections (stages/generator/q4.ts): float weights quantized as Q4_0 does, and the
 * MatMulNBits node onnxruntime runs them with, against a float MatMul of the same weights.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { onnxTelemetryOff } from '../../src/common/onnxTelemetry.ts';
import { GraphBuilder } from '../../stages/generator/GraphBuilder.ts';
import { dequantizeQ4, q4MatMul, Q4_BLOCK, quantizeQ4 } from '../../stages/generator/q4.ts';
import { randomUniform } from '../../stages/generator/weights.ts';

const K = 96;
const N = 40;
const ROWS = 3;

/** y = x W for x [1, ROWS, K], W [K, N]: the weights as a float MatMul, or 4-bit. */
async function run(weights: Float32Array, form: 'float' | 'q4', x: Float32Array): Promise<Float32Array> {
  const g = new GraphBuilder('q4_probe');
  g.input('x', 'float32', [1, ROWS, K]);
  g.output('y', 'float32', [1, ROWS, N]);
  const y =
    form === 'float'
      ? g.op('MatMul', ['x', g.initializer('w', 'float32', [K, N], weights)])
      : q4MatMul(g, 'x', 'w', quantizeQ4(weights, K, N));
  g.op('Identity', [y], {}, 'y');
  onnxTelemetryOff();
  const session = await ort.InferenceSession.create(g.toBytes(), { intraOpNumThreads: 1 });
  try {
    const out = await session.run({ x: new ort.Tensor('float32', x, [1, ROWS, K]) });
    return out.y.data as Float32Array;
  } finally {
    await session.release();
  }
}

const maxAbs = (a: Float32Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

describe('4-bit generated weights', () => {
  const weights = randomUniform(7, 'probe.weight', K * N, 1 / Math.sqrt(K));
  const x = randomUniform(8, 'probe.x', ROWS * K, 1);

  it('quantizes each block of 32 inputs to within half a step (one at the clamped end), its peak exactly', () => {
    const q = quantizeQ4(weights, K, N);
    expect(q.scales).toHaveLength((K / Q4_BLOCK) * N);
    const back = dequantizeQ4(q);
    for (let r = 0; r < N; r++) {
      for (let b = 0; b < K / Q4_BLOCK; b++) {
        const step = q.scales[r * (K / Q4_BLOCK) + b];
        let peak = 0;
        for (let i = 0; i < Q4_BLOCK; i++) {
          const at = (b * Q4_BLOCK + i) * N + r;
          // The peak maps to -8, so a value near -peak on the other side rounds to 8 and is clamped to 7.
          const clamped = back[at] === Math.fround(7 * step);
          const bound = clamped ? Math.abs(step) : Math.abs(step) / 2;
          expect(Math.abs(back[at] - weights[at])).toBeLessThanOrEqual(bound + 1e-7);
          peak = Math.max(peak, Math.abs(weights[at]));
        }
        expect(Math.abs(step) * 8).toBeCloseTo(peak, 6);
      }
    }
  });

  it('refuses an input size that is not whole blocks', () => {
    expect(() => quantizeQ4(new Float32Array(40 * 2), 40, 2)).toThrow(/blocks of 32/);
  });

  it('MatMulNBits computes the dequantized weights, and they stay near the float ones they came from', async () => {
    const asFloat = await run(dequantizeQ4(quantizeQ4(weights, K, N)), 'float', x);
    const scale = maxAbs(asFloat);
    expect(maxDiff(await run(weights, 'q4', x), asFloat)).toBeLessThan(1e-5 * scale);
    const fromFloat = maxDiff(asFloat, await run(weights, 'float', x));
    expect(fromFloat).toBeGreaterThan(0);
    expect(fromFloat).toBeLessThan(0.2 * scale);
  });
});
