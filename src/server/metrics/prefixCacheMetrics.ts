/**
 * The prefix caches of the Thinker and Talker instances (src/sched/PrefixCache.ts), from their stats reports: hit
 * and miss positions and evictions as counters (the stage reports totals since it started: StageSeries turns them
 * into increments), entries' bytes as a gauge. Labelled by instance, like the other stage metrics.
 */
import type { Registry } from 'prom-client';
import { declareMetrics } from './declareMetrics.ts';
import type { StageSeries } from './StageSeries.ts';

/**
 * The metrics, registered in the server's registry (metrics.ts owns it and calls this once), and the observer of a
 * Thinker or Talker stats section's `prefix` part (src/sched/PrefixCache.ts PrefixCacheStats); `series` is the
 * server's, which zeroes the cache's bytes when the instance dies.
 */
export function prefixCacheMetrics(
  metricsRegistry: Registry,
  series: StageSeries,
): (stage: string, p: Record<string, unknown>) => void {
  const m = declareMetrics(metricsRegistry, {
    hitPositions: {
      counter: 'chorus_prefix_cache_hit_positions_total',
      help: 'Prompt positions a stage took from its prefix cache instead of computing them.',
      labels: ['stage'],
    },
    missPositions: {
      counter: 'chorus_prefix_cache_miss_positions_total',
      help: 'Prompt positions a stage looked up in its prefix cache and had to compute.',
      labels: ['stage'],
    },
    evictions: {
      counter: 'chorus_prefix_cache_evictions_total',
      help: 'Prefix cache entries dropped for the byte budget (engine.prefix_cache.max_bytes).',
      labels: ['stage'],
    },
    bytes: {
      gauge: 'chorus_prefix_cache_bytes',
      help: 'Bytes a stage prefix cache holds now (KV, and the rows a Thinker keeps beside it for a Talker).',
      labels: ['stage'],
    },
  });
  return (stage, p) => {
    series.count(stage, [
      ['reusedTokens', p.reusedTokens, m.hitPositions],
      ['missedTokens', p.missedTokens, m.missPositions],
      ['evictions', p.evictions, m.evictions],
    ]);
    series.hold(stage, m.bytes, p.retainedBytes);
  };
}
