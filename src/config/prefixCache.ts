/** `engine.prefix_cache` of a stage: on by default for autoregressive stages, refused on the others. */
import type { ModelSpec } from '../common/modelSpec.ts';
import type { PrefixCacheSettings } from '../common/graph.ts';
import { prefixBudgetProblem } from '../sched/PrefixCache.ts';
import { defaults, parseByteSize } from './defaults.ts';
import type { Problems } from './problems.ts';

type PrefixCacheYaml = false | { readonly max_bytes?: string | number; readonly block_positions?: number } | undefined;

export function resolvePrefixCache(
  index: number,
  raw: PrefixCacheYaml,
  workerType: 'ar' | 'generation',
  model: ModelSpec | null,
  problems: Problems,
): PrefixCacheSettings | null {
  const at = ['stages', index, 'engine', 'prefix_cache'];
  if (workerType !== 'ar') {
    if (raw !== undefined && raw !== false)
      problems.add(at, 'only autoregressive stages (thinker, talker) keep KV to cache: remove the key');
    return null;
  }
  if (raw === false) return null;
  const d = defaults.engine.prefixCache;
  const maxBytes = raw?.max_bytes === undefined ? d.maxBytes : parseByteSize(raw.max_bytes);
  const blockPositions = raw?.block_positions ?? d.blockPositions;
  const settings = { maxBytes, blockPositions };
  const problem = prefixBudgetProblem(settings, generatedKvBytesPerPosition(model) ?? 0);
  if (problem) {
    problems.add([...at, 'max_bytes'], problem);
    return null;
  }
  return settings;
}

/** KV bytes per position of a generated decoder (keys and values of every layer, float32); null for files. */
function generatedKvBytesPerPosition(model: ModelSpec | null): number | null {
  if (model?.source !== 'generated' || (model.kind !== 'thinker' && model.kind !== 'talker')) return null;
  return 2 * model.size.numLayers * model.size.hiddenSize * Float32Array.BYTES_PER_ELEMENT;
}
