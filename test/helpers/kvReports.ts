/** What KV-aware routing tests wait for: the route decisions main publishes, and a Thinker's report of its blocks. */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { channelNames } from '../../src/common/diagnostics.ts';
import { thinkerStatsOf } from '../../stages/thinker/protocol.ts';

/** One routing decision (chorus:route:decision). */
export interface Decision {
  readonly reason: string;
  readonly instance: string;
  readonly cachedPositions: number;
}

interface StatsReport {
  readonly instance: string;
  readonly kind?: unknown;
}

/** Resolves with the first message on `channel` that `match` accepts. */
export function next(channel: string, match: (m: unknown) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (m: unknown) => {
      if (!match(m)) return;
      unsubscribe(channel, check);
      resolve();
    };
    subscribe(channel, check);
  });
}

/**
 * Resolves once `instance` reports holding the conversation so far: at least the whole blocks (of 16) of a
 * `prompt`-position history (a report made before the last turn ended may arrive after its answer: stats and chunks
 * travel apart).
 */
export const heldReport = (instance: string, prompt: number): Promise<void> =>
  next(channelNames.stageStats, (m) => {
    const r = m as StatsReport;
    return r.instance === instance && (thinkerStatsOf(r).prefix?.held?.names.length ?? 0) >= Math.floor(prompt / 16);
  });
