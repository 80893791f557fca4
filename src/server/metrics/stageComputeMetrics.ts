/**
 * What each stage instance computes, from its stats reports (src/worker/messages.ts StageStats): step durations by
 * phase as a histogram (prefill and decode for the Thinker and Talker, run for the others), and for the
 * autoregressive stages prompt positions computed and outputs sampled as counters (totals since the stage started:
 * StageSeries turns them into increments) and the KV cache held against its budget as gauges. The figures
 * vLLM's operators read (prompt and generation tokens, prefill and decode time, KV cache usage), per instance.
 */
import type { Registry } from 'prom-client';
import { declareMetrics } from './declareMetrics.ts';
import { isMetricNumber } from './metricValue.ts';
import type { StageSeries } from './StageSeries.ts';

const PHASES = new Set(['prefill', 'decode', 'run']);

/**
 * The metrics, registered in the server's registry (metrics.ts owns it and calls this once), and the observer of a
 * stats report's `steps` and `ar` sections; `series` is the server's, which zeroes the KV held when the instance dies.
 */
export function stageComputeMetrics(
  metricsRegistry: Registry,
  series: StageSeries,
): (stage: string, steps: unknown, ar: unknown) => void {
  const m = declareMetrics(metricsRegistry, {
    stepSeconds: {
      histogram: 'chorus_stage_step_seconds',
      help:
        'Duration of each step a stage ran, by phase: prefill (it computed prompt positions), decode (every ' +
        'sequence in it took one position of its last output), run (encoders, Code2Wav).',
      labels: ['stage', 'phase'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    },
    promptTokens: {
      counter: 'chorus_stage_prompt_tokens_total',
      help:
        'Prompt positions a Thinker or Talker computed (its prefix cache hits are not computed: ' +
        'chorus_prefix_cache_hit_positions_total).',
      labels: ['stage'],
    },
    generationTokens: {
      counter: 'chorus_stage_generation_tokens_total',
      help: 'Outputs a Thinker (text tokens) or Talker (codec frames) sampled.',
      labels: ['stage'],
    },
    kvBytes: {
      gauge: 'chorus_stage_kv_cache_bytes',
      help: 'KV cache bytes the running requests of a Thinker or Talker hold now (the prefix cache is apart).',
      labels: ['stage'],
    },
    kvBudgetBytes: {
      gauge: 'chorus_stage_kv_cache_budget_bytes',
      help: "A Thinker or Talker's KV cache budget (engine.kv_cache_bytes): requests wait or are preempted beyond it.",
      labels: ['stage'],
    },
  });
  return (stage, steps, ar) => {
    if (Array.isArray(steps))
      for (const s of steps as { phase?: unknown; ms?: unknown }[])
        if (isMetricNumber(s.ms) && typeof s.phase === 'string' && PHASES.has(s.phase))
          m.stepSeconds.observe({ stage, phase: s.phase }, s.ms / 1000);
    if (typeof ar !== 'object' || ar === null) return;
    const a = ar as Record<string, unknown>;
    series.count(stage, [
      ['promptTokens', a.promptTokens, m.promptTokens],
      ['generatedTokens', a.generatedTokens, m.generationTokens],
    ]);
    series.hold(stage, m.kvBytes, a.kvUsedBytes);
    // The budget is the instance's setting, not memory it holds: its death leaves it as it was.
    if (isMetricNumber(a.kvBudgetBytes)) m.kvBudgetBytes.set({ stage }, a.kvBudgetBytes);
  };
}
