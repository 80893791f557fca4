/**
 * The generated-model preset a stage's model section names (or the graph's model_preset), reporting an unknown
 * name where it was written, and the generated model sized from it. Shared by the descriptors of the kinds with
 * generated models.
 */
import type { GeneratedModelSpec } from '../src/common/modelSpec.ts';
import type { ProblemSink } from '../src/common/problems.ts';
import { suggest } from '../src/common/problems.ts';
import type { GeneratedModelContext } from './StageKindDescriptor.ts';

export function presetOf<P>(
  ctx: GeneratedModelContext,
  presets: Readonly<Record<string, P>>,
  what: string,
  problems: ProblemSink,
): P | null {
  const found = presets[ctx.preset];
  if (found) return found;
  const names = Object.keys(presets);
  problems.add(
    ctx.presetFromGraph ? ['model_preset'] : [...ctx.at, 'preset'],
    `unknown ${what} "${ctx.preset}"${suggest(ctx.preset, names)} (presets: ${names.join(', ')})`,
  );
  return null;
}

/** A generated model's kind and sizes (what a descriptor decides; the preset and seed are the section's). */
export type SizedModel = GeneratedModelSpec extends infer M
  ? M extends GeneratedModelSpec
    ? Pick<M, 'kind' | 'size'>
    : never
  : never;

/**
 * The stage's generated model: `sized` picks the preset family's sizes, applies the section's overrides and checks
 * them, recording problems. Null when the preset is unknown, `sized` returns null or records a problem.
 */
export function generatedModel<P>(
  ctx: GeneratedModelContext,
  presets: Readonly<Record<string, P>>,
  what: string,
  problems: ProblemSink,
  sized: (family: P) => SizedModel | null,
): GeneratedModelSpec | null {
  const family = presetOf(ctx, presets, what, problems);
  if (!family) return null;
  const before = problems.count;
  const model = sized(family);
  if (model === null || problems.count > before) return null;
  return { source: 'generated', preset: ctx.preset, seed: ctx.seed, ...model } as GeneratedModelSpec;
}

/** hidden_size must split evenly into heads. */
export function checkHeads(
  size: { hiddenSize: number; numHeads: number },
  ctx: GeneratedModelContext,
  problems: ProblemSink,
): void {
  if (size.hiddenSize % size.numHeads !== 0) {
    problems.add(
      [...ctx.at, 'hidden_size'],
      `must be divisible by num_heads (${size.numHeads}), got ${size.hiddenSize}`,
    );
  }
}
