/**
 * `engine.migration` of a stage: on by default for every stage that can replay a request (issue 30: a lost stage
 * costs a pause, not the answer), `false` turns it off. An encoder stage has none and refuses the key: its loss costs
 * a request only its media items or fails it (encoder.on_failure), and the replay of the stages after it does not
 * re-encode media.
 */
import type { MigrationSettings } from '../common/graph.ts';
import { defaults } from './defaults.ts';
import type { Problems } from './problems.ts';

type MigrationYaml =
  | false
  | { readonly max_attempts?: number; readonly max_replay_tokens?: number; readonly max_wait_ms?: number }
  | undefined;

export function resolveMigration(
  index: number,
  raw: MigrationYaml,
  encoder: boolean,
  problems: Problems,
): MigrationSettings | null {
  if (raw === false || (raw === undefined && encoder)) return null;
  if (encoder) {
    problems.add(
      ['stages', index, 'engine', 'migration'],
      'an encoder stage does not migrate requests (encoder.on_failure says what its loss costs): remove the key',
    );
    return null;
  }
  const d = defaults.engine.migration;
  return {
    maxAttempts: raw?.max_attempts ?? d.maxAttempts,
    maxReplayTokens: raw?.max_replay_tokens ?? d.maxReplayTokens,
    maxWaitMs: raw?.max_wait_ms ?? d.maxWaitMs,
  };
}
