/**
 * The generated-model preset a stage's model section names (or the graph's model_preset), reporting an unknown
 * name where it was written. Shared by the descriptors of the kinds with generated models.
 */
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
