/** `engine.prefix_cache` of a stage: on by default for autoregressive stages, refused on the others. */
import type { ModelSpec } from '../common/modelSpec.ts';
import type { PrefixCacheSettings } from '../common/graph.ts';
import { prefixBudgetProblem } from '../sched/PrefixCache.ts';
import { defaults, parseByteSize } from './defaults.ts';
import type { Problems } from './problems.ts';

type PrefixCacheYaml = false | { readonly max_bytes?: string | number; readonly block_positions?: number } | undefined;

/** `engine.prefill_first`: only AR stages schedule prefills against decodes; elsewhere the key is refused. */
export function resolvePrefillFirst(
  index: number,
  raw: boolean | undefined,
  workerType: 'ar' | 'generation',
  problems: Problems,
): { prefillFirst?: boolean } {
  if (raw === undefined) return {};
  if (workerType !== 'ar') {
    problems.add(
      ['stages', index, 'engine', 'prefill_first'],
      'only autoregressive stages (thinker, talker) have prefills to order against decodes: remove the key',
    );
    return {};
  }
  return { prefillFirst: raw };
}

/** `engine.long_prefill_token_threshold`: a per-request cap on a step's positions, for AR stages; refused elsewhere. */
export function resolveLongPrefill(
  index: number,
  raw: number | undefined,
  workerType: 'ar' | 'generation',
  problems: Problems,
): { longPrefillTokenThreshold?: number } {
  if (raw === undefined) return {};
  if (workerType !== 'ar') {
    problems.add(
      ['stages', index, 'engine', 'long_prefill_token_threshold'],
      'only autoregressive stages (thinker, talker) prefill in chunks: remove the key',
    );
    return {};
  }
  return { longPrefillTokenThreshold: raw };
}

/** `engine.seat_turn_steps`: AR stages take turns at their seats (default on); elsewhere the key is refused. */
export function resolveSeatTurns(
  index: number,
  raw: number | false | undefined,
  workerType: 'ar' | 'generation',
  problems: Problems,
): { seatTurnSteps?: number | null } {
  if (workerType !== 'ar') {
    if (raw !== undefined)
      problems.add(
        ['stages', index, 'engine', 'seat_turn_steps'],
        'only autoregressive stages (thinker, talker) hold batch seats across steps: remove the key',
      );
    return {};
  }
  return { seatTurnSteps: raw === false ? null : (raw ?? defaults.engine.seatTurnSteps) };
}

/** `engine.sync_encoding`: the Thinker's baseline mode (docs/video.md); refused on any other kind. */
export function resolveSyncEncoding(
  index: number,
  raw: boolean | undefined,
  kind: string,
  problems: Problems,
): { syncEncoding?: boolean } {
  if (raw === undefined) return {};
  if (kind !== 'thinker') {
    problems.add(
      ['stages', index, 'engine', 'sync_encoding'],
      'only the thinker waits for encoded media rows (sync_encoding is its bench baseline): remove the key',
    );
    return {};
  }
  return { syncEncoding: raw };
}

/** `engine.media_rows_bytes`: the Thinker's budget for encoded media rows held (MediaRowsBudget.ts); else refused. */
export function resolveMediaRowsBytes(
  index: number,
  raw: string | number | undefined,
  kind: string,
  problems: Problems,
): { mediaRowsBytes?: number } {
  if (raw === undefined) return {};
  if (kind !== 'thinker') {
    problems.add(
      ['stages', index, 'engine', 'media_rows_bytes'],
      'only the thinker holds encoded media rows: remove the key (an encoder bounds its own by cache_bytes)',
    );
    return {};
  }
  return { mediaRowsBytes: parseByteSize(raw) };
}

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
