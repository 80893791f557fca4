/**
 * `chorus bench --config configs/two-host.yaml --compare-config configs/tiny-omni-text-in.yaml` at tiny scale:
 * the bench starts host B itself (a redis-server and one `chorus stage` process per remote stage), runs both configs
 * and reports two-host over all-shm; afterwards nothing it started is left (checked by pid). Never speed goals.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatReport } from '../../bench/ttfp/report/formatReport.ts';
import type { BenchResult } from '../../bench/ttfp/results.ts';
import { runServeBench, type ServeBenchOptions } from '../../bench/ttfp/runServeBench.ts';
import { logger } from '../../src/common/log.ts';
import { benchProcesses, isAlive } from '../helpers/processes.ts';

const CONFIGS = join(import.meta.dirname, '..', '..', 'configs');
const TWO_HOST = join(CONFIGS, 'two-host.yaml');
const TINY_OMNI = join(CONFIGS, 'tiny-omni-text-in.yaml');

const options = {
  target: { kind: 'config', file: TWO_HOST },
  compareConfig: TINY_OMNI,
  protocol: 'realtime',
  concurrency: [1],
  numPrompts: 2,
  inputLen: 8,
  outputLen: 8,
  warmup: 1,
  seed: 0,
  timeoutMs: 30_000,
  compareSync: false,
  limit: false,
  progress: null,
  log: logger,
  command: 'test',
} satisfies ServeBenchOptions;

/** Children of this process that look like what the bench starts. */
function benchChildren(): string[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when there are none
  }
  return out.split('\n').filter((line) => / stage --config |redis-server/.test(line));
}

describe('chorus bench: two-host (remote stages over Redis) against all-shm', () => {
  let result: BenchResult;
  const bench = benchProcesses();
  const spawned = bench.spawned;

  beforeAll(async () => {
    result = await bench.run(() => runServeBench(options));
  }, 90_000);

  afterAll(() => bench.killLeft());

  it('runs both configs and reports two-host over tiny-omni with a finite ratio', () => {
    expect(result.runs.map((r) => [r.variant, r.concurrency])).toEqual([
      ['two-host', 1],
      ['tiny-omni-text-in', 1],
    ]);
    for (const r of result.runs) {
      expect(r.failed, r.errors.join('; ')).toBe(0);
      expect(r.completed).toBe(2);
      expect(r.mean_ttfp_ms!).toBeGreaterThan(0);
    }
    // Same models and seeds on both: the same answers, so the same amount of audio and text.
    const [twoHost, allShm] = result.runs;
    expect(twoHost.audio_seconds).toBe(allShm.audio_seconds);
    expect(twoHost.mean_text_tokens).toBe(allShm.mean_text_tokens);

    expect(result.ratios).toEqual([]); // no async/sync pair: two configs are compared as configs
    expect(result.config_ratios).toHaveLength(1);
    const ratio = result.config_ratios[0];
    expect([ratio.concurrency, ratio.config, ratio.compare_config]).toEqual([1, 'two-host', 'tiny-omni-text-in']);
    for (const v of [ratio.ttfp, ratio.p50_ttfp, ratio.ttft, ratio.e2e, ratio.rtf]) {
      expect(Number.isFinite(v), String(v)).toBe(true);
      expect(v!).toBeGreaterThan(0);
    }
    expect(ratio.ttfp).toBeCloseTo(twoHost.mean_ttfp_ms! / allShm.mean_ttfp_ms!, 9);
  });

  it('records both configs and where the remote stages ran', () => {
    expect(result.target).toEqual({ kind: 'config', file: TWO_HOST, compare_file: TINY_OMNI });
    expect(Object.keys(result.config_sha256).sort()).toEqual(['tiny-omni-text-in', 'two-host']);
    expect(result.config_sha256['two-host']).not.toBe(result.config_sha256['tiny-omni-text-in']);
    expect(Object.keys(result.remote_stages)).toEqual(['two-host']);
    expect(result.remote_stages['two-host']).toMatch(/^talker#bench-0, code2wav#bench-0 .* own redis-server/);
    // One deployment at a time with remote stages: each mode's runs in one block, one mode after the other.
    expect(result.options.interleaved).toBe(false);
    expect(result.runs.map((r) => r.blocks)).toEqual(result.runs.map(() => 1));
    // The report: a table row per config, then the first as a multiple of the second, in words.
    const text = formatReport(result);
    expect(text).toMatch(/^\| two-host \| 8 \| 8 \|/m);
    expect(text).toMatch(/^\| tiny-omni-text-in \| 8 \| 8 \|/m);
    expect(text).toMatch(/\*\*two-host as a multiple of tiny-omni-text-in\*\*\n\n- c=1: mean TTFP \d+\.\d+x/);
  });

  it('started a redis-server and one stage process per remote stage, and stopped them all', () => {
    expect(spawned.map((p) => [p.role, p.role === 'stage' ? p.name : 'redis'])).toEqual([
      ['redis-server', 'redis'],
      ['stage', 'talker#bench-0'],
      ['stage', 'code2wav#bench-0'],
    ]);
    for (const p of spawned) expect(isAlive(p.pid), `${p.role} ${p.name} (pid ${p.pid})`).toBe(false);
    expect(benchChildren()).toEqual([]);
  });

  it('refuses --compare-sync on a config with remote stages before starting anything', async () => {
    const before = spawned.length;
    const { compareConfig: _, ...withoutCompareConfig } = options;
    await expect(runServeBench({ ...withoutCompareConfig, compareSync: true })).rejects.toThrow(/--compare-config/);
    expect(spawned.length).toBe(before);
  });
});
