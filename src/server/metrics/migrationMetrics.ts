/**
 * Request migrations (src/engine/requests/Migrations.ts), from the engine's chorus:request:migrated events: how many
 * requests a lost stage instance cost, by stage, why it was lost and what became of them, and the pause each
 * migrated one cost its client (from the loss to the replay's first output the client did not have).
 */
import type { Registry } from 'prom-client';
import { declareMetrics } from './declareMetrics.ts';

const REASONS = new Set(['died', 'hung', 'lost']);
const OUTCOMES = new Set(['migrated', 'refused', 'failed']);

/** The metrics, registered in the server's registry (metrics.ts owns it); returns the event's handler. */
export function migrationMetrics(metricsRegistry: Registry): (message: unknown) => void {
  const { migrations, pauseSeconds } = declareMetrics(metricsRegistry, {
    migrations: {
      counter: 'chorus_migrations_total',
      help:
        'Requests lost with a stage instance whose stage migrates (engine.migration), by stage, reason (died, hung, ' +
        'lost: a remote instance) and outcome (migrated: replayed on a live instance; refused: past a limit or not ' +
        'replayable, failed as before; failed: no live instance within chunk_timeout_ms).',
      labels: ['stage', 'reason', 'outcome'],
    },
    pauseSeconds: {
      histogram: 'chorus_migration_pause_seconds',
      help:
        'Migrated requests: the pause their client saw, from the loss of the instance to the first output of the ' +
        'replay it did not have already (the restart or the wait for a live instance, then the replay).',
      labels: ['stage'],
      buckets: [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30],
    },
  });
  return (message) => {
    const { stageId, reason, outcome, pauseMs } = message as Record<string, unknown>;
    if (typeof stageId !== 'string' || !REASONS.has(reason as string) || !OUTCOMES.has(outcome as string)) return;
    migrations.inc({ stage: stageId, reason: reason as string, outcome: outcome as string });
    if (typeof pauseMs === 'number') pauseSeconds.observe({ stage: stageId }, pauseMs / 1000);
  };
}
