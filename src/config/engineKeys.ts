/**
 * The engine keys only some stages take: the autoregressive stages' batch-scheduling knobs (prefill_first,
 * seat_turn_steps, long_prefill_token_threshold) and the Thinker's media ones (sync_encoding, media_rows_bytes). Each
 * is resolved where its stage takes it and refused, with the fix, where it does not: one rule for all of them.
 */
import type { Static } from '@sinclair/typebox';
import type { WorkerType } from '../common/graph.ts';
import { defaults, parseByteSize } from './defaults.ts';
import type { Problems } from './problems.ts';
import type { EngineYaml } from './schema.ts';

export interface ScopedEngineSettings {
  prefillFirst?: boolean;
  seatTurnSteps?: number | null;
  longPrefillTokenThreshold?: number;
  syncEncoding?: boolean;
  mediaRowsBytes?: number;
}

/** What a stage that does not take the key is told. */
const REFUSALS = {
  prefill_first: 'only autoregressive stages (thinker, talker) have prefills to order against decodes: remove the key',
  seat_turn_steps: 'only autoregressive stages (thinker, talker) hold batch seats across steps: remove the key',
  long_prefill_token_threshold: 'only autoregressive stages (thinker, talker) prefill in chunks: remove the key',
  sync_encoding: 'only the thinker waits for encoded media rows (sync_encoding is its bench baseline): remove the key',
  media_rows_bytes:
    'only the thinker holds encoded media rows: remove the key (an encoder bounds its own by cache_bytes)',
} as const;

type EngineYamlValue = Static<typeof EngineYaml>;

export function resolveScopedEngineKeys(
  index: number,
  engine: EngineYamlValue | undefined,
  stage: { readonly kind: string; readonly workerType: WorkerType },
  problems: Problems,
): ScopedEngineSettings {
  /** The key's value where the stage takes it; where it does not, a problem saying so. */
  const scoped = <K extends keyof typeof REFUSALS>(key: K, takes: boolean): EngineYamlValue[K] | undefined => {
    const raw = engine?.[key];
    if (raw === undefined || takes) return raw;
    problems.add(['stages', index, 'engine', key], REFUSALS[key]);
    return undefined;
  };
  const ar = stage.workerType === 'ar';
  const thinker = stage.kind === 'thinker';
  const prefillFirst = scoped('prefill_first', ar);
  const seatTurns = scoped('seat_turn_steps', ar);
  const longPrefill = scoped('long_prefill_token_threshold', ar);
  const syncEncoding = scoped('sync_encoding', thinker);
  const mediaRows = scoped('media_rows_bytes', thinker);
  return {
    ...(prefillFirst !== undefined ? { prefillFirst } : {}),
    // Seat turns are on by default where they apply (false: off).
    ...(ar ? { seatTurnSteps: seatTurns === false ? null : (seatTurns ?? defaults.engine.seatTurnSteps) } : {}),
    ...(longPrefill !== undefined ? { longPrefillTokenThreshold: longPrefill } : {}),
    ...(syncEncoding !== undefined ? { syncEncoding } : {}),
    ...(mediaRows !== undefined ? { mediaRowsBytes: parseByteSize(mediaRows) } : {}),
  };
}
