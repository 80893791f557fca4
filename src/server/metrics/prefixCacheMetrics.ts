/**
 * The prefix caches of the Thinker and Talker instances (src/sched/PrefixCache.ts), from their stats reports: hit
 * and miss positions and evictions as counters (the stage reports totals since it started: CumulativeCounters
 * turns them into increments), entries' bytes as a gauge. Labelled by instance, like the other stage metrics.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { CumulativeCounters } from './CumulativeCounters.ts';
import { isMetricNumber } from './metricValue.ts';

export interface PrefixCacheMetrics {
  /** A Thinker or Talker stats section's `prefix` part (src/sched/PrefixCache.ts PrefixCacheStats). */
  observe(stage: string, p: Record<string, unknown>): void;
  /** The instance died: its cache went with it. */
  stageDied(stage: string): void;
}

/** The metrics, registered in the server's registry (metrics.ts owns it and calls this once). */
export function prefixCacheMetrics(metricsRegistry: Registry): PrefixCacheMetrics {
  const prefixMetrics = {
    hitPositions: new Counter({
      name: 'chorus_prefix_cache_hit_positions_total',
      help: 'Prompt positions a stage took from its prefix cache instead of computing them.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    missPositions: new Counter({
      name: 'chorus_prefix_cache_miss_positions_total',
      help: 'Prompt positions a stage looked up in its prefix cache and had to compute.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    evictions: new Counter({
      name: 'chorus_prefix_cache_evictions_total',
      help: 'Prefix cache entries dropped for the byte budget (engine.prefix_cache.max_bytes).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    bytes: new Gauge({
      name: 'chorus_prefix_cache_bytes',
      help: 'Bytes a stage prefix cache holds now (KV, and the rows a Thinker keeps beside it for a Talker).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
  };

  const totals = new CumulativeCounters();
  const cachingStages = new Set<string>();
  return {
    observe(stage, p) {
      cachingStages.add(stage);
      const counters = [
        ['reusedTokens', p.reusedTokens, prefixMetrics.hitPositions],
        ['missedTokens', p.missedTokens, prefixMetrics.missPositions],
        ['evictions', p.evictions, prefixMetrics.evictions],
      ] as const;
      for (const [field, total, counter] of counters)
        if (isMetricNumber(total)) counter.inc({ stage }, totals.increment(stage, field, total));
      if (isMetricNumber(p.retainedBytes)) prefixMetrics.bytes.set({ stage }, p.retainedBytes);
    },

    stageDied(stage) {
      totals.restart(stage);
      if (cachingStages.has(stage)) prefixMetrics.bytes.set({ stage }, 0);
    },
  };
}
