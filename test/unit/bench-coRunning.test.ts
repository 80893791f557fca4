/**
 * Co-running at c=10 (bench/ttfp/coRunning.ts): each stage's CPU a request as served against its models alone at
 * that batch, instances of one stage summed, and the limit that charges co-running with the run's share of it, in
 * the report and as a goal.
 */
import { describe, expect, it } from 'vitest';
import type { ThroughputLimit } from '../../bench/limit/throughputLimit.ts';
import { coRunningAt, coRunningLines } from '../../bench/ttfp/coRunning.ts';
import { evaluateGoals } from '../../bench/ttfp/goals.ts';
import { summarizeRun } from '../../bench/ttfp/metrics.ts';
import { toRunRow, type RunRow } from '../../bench/ttfp/results.ts';

function row(concurrency: number, cpu: Record<string, number> | null, reqPerS: number): RunRow {
  const traces = [{ startMs: 0, ok: true, events: [{ type: 'done' as const, atMs: 5 }] }];
  const base = toRunRow(summarizeRun(traces), {
    asyncChunk: true,
    concurrency,
    inputLen: 100,
    outputLen: 100,
    code2wavBatch: 16,
    durationMs: 1000,
    traces,
  });
  const total = cpu ? Object.values(cpu).reduce((a, x) => a + x, 0) : 0;
  return {
    ...base,
    request_throughput: reqPerS,
    cpu_ms_per_request: cpu,
    cpu_bound_rps: cpu ? 2000 / total : null,
  };
}

const limit = { batch: 10, thinker_ms: 300, talker_ms: 800, code2wav_ms: 30 } as ThroughputLimit;
// 500 ms of CPU a request in all: the two cores allow 4 req/s.
const served = {
  'thinker#0': 60,
  'thinker#1': 30,
  'talker#0': 200,
  'code2wav#0': 10,
  'audio-encoder#0': 0,
  bench: 200,
};

describe('co-running at c=10', () => {
  it('sums the instances of a stage and sets each stage beside its models alone per request of the batch', () => {
    const x = coRunningAt([row(10, served, 3)], [limit], 10)!;
    expect(x.stages).toEqual([
      { stage: 'thinker', servedMs: 90, aloneMs: 30 },
      { stage: 'talker', servedMs: 200, aloneMs: 80 },
      { stage: 'code2wav', servedMs: 10, aloneMs: 3 },
      { stage: 'audio-encoder', servedMs: 0, aloneMs: null },
      { stage: 'bench', servedMs: 200, aloneMs: null },
    ]);
    expect(x.limitRps).toBe(4);
    expect(x.share).toBeCloseTo(0.75, 9);
    const [line] = coRunningLines([row(1, served, 1), row(10, served, 3)], [limit]);
    expect(line).toContain('thinker 90.0 (3.00x its 30.0 alone)');
    expect(line).toContain('= 500 ms a request');
    expect(line).toContain("the run's req/s is 0.75 of it");
  });

  it('is a goal only with the CPU of every serving process (a server by URL has no main counted)', () => {
    const goal = (r: RunRow) => evaluateGoals([r], [], null, [limit]).find((g) => /co-running/.test(g.name));
    expect(goal(row(10, served, 3.6))).toMatchObject({ value: 0.9, met: true });
    expect(goal(row(10, served, 3))?.met).toBe(false);
    expect(goal(row(10, null, 3))).toBeUndefined();
    expect(coRunningLines([row(10, null, 3)], [limit])).toEqual([]);
  });
});
