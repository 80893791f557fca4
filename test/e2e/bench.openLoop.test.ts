/**
 * `chorus bench --request-rate` at tiny scale against one real server (the default pipeline, its admission
 * tightened to one running request and no line, so that a burst meets refusals): a Poisson run over chat reports
 * every figure, and a burst over Realtime is partly refused, quickly, and counted as refused, not failed. What
 * must hold on any machine only: speed goals live in the bench.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatOpenLoop } from '../../bench/ttfp/openLoop/formatOpenLoop.ts';
import { runOpenLoopBench, type OpenLoopBenchOptions } from '../../bench/ttfp/openLoop/runOpenLoopBench.ts';
import { runCapacityBench } from '../../bench/ttfp/openLoop/capacityBench.ts';
import { writeResultFiles } from '../../bench/report/writeResultFiles.ts';
import { readBenchConfig } from '../../bench/ttfp/inProcessServer.ts';
import { logger } from '../../src/common/log.ts';
import { defaultConfigPath } from '../../src/config/paths.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { startServer } from '../../src/server/app.ts';

let engine: Orchestrator;
let close: () => Promise<void>;
let url: string;

beforeAll(async () => {
  const config = await readBenchConfig(defaultConfigPath());
  engine = await Orchestrator.start(config.graph, { log: logger });
  const started = await startServer(engine, {
    host: '127.0.0.1',
    port: 0,
    apiKey: null,
    logger,
    maxRunningRequests: 1,
    maxQueuedRequests: 0,
  });
  url = started.url;
  close = async () => {
    await started.app.close();
    await engine.close();
  };
});

afterAll(async () => {
  await close?.();
});

function options(o: Partial<OpenLoopBenchOptions>): OpenLoopBenchOptions {
  return {
    target: { kind: 'url', url, apiKey: null },
    protocol: 'chat',
    ratesPerS: [2],
    burstiness: 1,
    length: { durationS: 4 },
    sloTtfpMs: null,
    inputLen: 8,
    outputLen: 8,
    warmup: 1,
    seed: 0,
    compareSync: false,
    timeoutMs: 30_000,
    progress: null,
    log: logger,
    command: 'test',
    ...o,
  };
}

describe('chorus bench --request-rate', () => {
  it('a Poisson run over chat reports every figure, and writes its report', async () => {
    const result = await runOpenLoopBench(options({ sloTtfpMs: 60_000 }));
    expect(result.tool).toBe('chorus bench --request-rate');
    expect(result.git_sha).toMatch(/^[0-9a-f]{7,40}|unknown/);
    expect(result.rates).toHaveLength(1);
    const [r] = result.rates;
    expect(r.failed, r.errors.join('; ')).toBe(0);
    expect(r.num_requests).toBeGreaterThan(0);
    expect(r.offered_rps).toBeCloseTo(r.num_requests / 4);
    expect(r.completed + r.refused).toBe(r.num_requests);
    expect(r.admitted_rps).toBeCloseTo(r.completed / 4);
    expect(r.completed).toBeGreaterThan(0);
    for (const p of [r.ttft_ms, r.ttfp_ms]) {
      expect(p.p50!).toBeGreaterThan(0);
      expect(p.p95!).toBeGreaterThanOrEqual(p.p50!);
      expect(p.p99!).toBeGreaterThanOrEqual(p.p95!);
    }
    expect(r.underrun_share).toBeGreaterThanOrEqual(0);
    expect(r.total_stall_ms).toBeGreaterThanOrEqual(0);
    // A 60 s SLO: goodput is the completed requests that never underran.
    expect(r.good).toBe(r.completed - r.requests_with_underruns);
    expect(r.goodput_rps).toBeLessThanOrEqual(r.admitted_rps);
    expect(r.send_lag_p99_ms).not.toBeNull();
    if (r.refused > 0) expect(r.refusal_ms.p99!).toBeGreaterThanOrEqual(0);
    const dir = await mkdtemp(path.join(tmpdir(), 'chorus-openloop-'));
    try {
      const files = await writeResultFiles(dir, result, formatOpenLoop(result));
      expect(await readFile(files.markdown, 'utf8')).toMatch(/\| async \| 2 \|/);
      expect(JSON.parse(await readFile(files.json, 'utf8')).rates[0].request_rate).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a burst over Realtime beyond one running request: refused quickly, counted as refused', async () => {
    const result = await runOpenLoopBench(
      options({ protocol: 'realtime', ratesPerS: [200], length: { numPrompts: 5 }, warmup: 0 }),
    );
    const [r] = result.rates;
    expect(r.failed, r.errors.join('; ')).toBe(0);
    expect(r.num_requests).toBe(5);
    expect(r.refused).toBeGreaterThan(0);
    expect(r.completed).toBeGreaterThan(0);
    expect(r.refused + r.completed).toBe(5);
    expect(r.refused_share).toBeCloseTo(r.refused / 5);
    // A refusal is an error event answering response.create at once, not after a wait in line.
    expect(r.refusal_ms.p50!).toBeGreaterThanOrEqual(0);
    expect(r.refusal_ms.p99!).toBeLessThan(5_000);
    expect(r.admitted_rps).toBeLessThan(r.offered_rps);
  });

  it('--find-capacity: each step is an open-loop run and a row, judged and listed in the capacity report', async () => {
    const findCapacity = { quantile: 0.9, startRate: 2, relTolerance: 0.1, maxSteps: 2, multiples: [1] };
    const result = await runCapacityBench(options({ sloTtfpMs: 5_000, length: { durationS: 2 } }), findCapacity);
    expect(result.capacity).toHaveLength(1);
    const [c] = result.capacity!;
    expect(c).toMatchObject({ variant: 'async', slo_ttfp_ms: 5_000, quantile: 0.9, step_window_s: 2 });
    expect(c.steps).toHaveLength(2);
    // The second step doubled or halved the first, as the first passed or failed.
    expect(c.steps[1].rate).toBe(c.steps[0].passed ? 4 : 1);
    expect(result.rates.map((r) => r.request_rate).sort()).toEqual(c.steps.map((s) => s.rate).sort());
    for (const s of c.steps) {
      expect(s.requests).toBe(result.rates.find((r) => r.request_rate === s.rate)!.num_requests);
      expect(s.passed).toBe(s.why === '');
      if (s.passed) expect(c.capacity_rps).toBeGreaterThanOrEqual(s.rate);
      else expect(c.failed_at_rps).toBeLessThanOrEqual(s.rate);
    }
    expect(formatOpenLoop(result)).toMatch(/capacity at TTFP p90 <= 5000 ms, no underrun/);
  });
});
