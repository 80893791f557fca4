/**
 * Dummy weights (vLLM's load_format: dummy): uniform noise with a chosen standard deviation. Each tensor
 * draws from its own PRNG seeded by (model seed, tensor name), so a tensor's values do not depend on the
 * order in which the generator happens to create tensors, and JS can recompute any one of them.
 * Uniform rather than Gaussian: one PRNG call per value, and random weights need no particular shape.
 */
import { Prng, hash32 } from '../sampling/Prng.ts';
import type { GraphBuilder } from './GraphBuilder.ts';

/** count values, uniform with mean 0 and the given standard deviation. */
export function randomUniform(seed: number, name: string, count: number, std: number): Float32Array {
  const rng = new Prng(hash32(`${seed >>> 0}/${name}`));
  const halfWidth = std * Math.sqrt(3); // Var(U(-a, a)) = a^2 / 3
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) out[i] = (rng.nextFloat() * 2 - 1) * halfWidth;
  return out;
}

export class Weights {
  constructor(
    private readonly g: GraphBuilder,
    readonly seed: number,
  ) {}

  uniform(name: string, dims: readonly number[], std: number): string {
    const count = dims.reduce((a, b) => a * b, 1);
    return this.g.initializer(name, 'float32', dims, randomUniform(this.seed, name, count, std));
  }

  fill(name: string, dims: readonly number[], value: number): string {
    const count = dims.reduce((a, b) => a * b, 1);
    return this.g.initializer(name, 'float32', dims, new Float32Array(count).fill(value));
  }

  data(name: string, dims: readonly number[], values: Float32Array): string {
    return this.g.initializer(name, 'float32', dims, values);
  }
}

/** Lets the event loop turn between layers of a long build (progress lines, control messages). */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
