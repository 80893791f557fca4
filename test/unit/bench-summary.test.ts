/**
 * The terminal report of `chorus bench` (formatText) as a reader in a 100-column terminal meets it: a labelled
 * summary per run, ratios in words, goals only when asked for (--goals), the wide tables only in results.md; and
 * the bench's log lines as plain text.
 */
import { describe, expect, it } from 'vitest';
import { benchLogger, plainLogLine } from '../../bench/benchLogger.ts';
import type { LimitResult } from '../../bench/limit/limitResult.ts';
import type { ThroughputLimit } from '../../bench/limit/throughputLimit.ts';
import { asyncSyncRatios, evaluateGoals } from '../../bench/ttfp/goals.ts';
import { summarizeRun } from '../../bench/ttfp/metrics.ts';
import { formatMarkdown, formatText } from '../../bench/ttfp/report/formatReport.ts';
import { REPORT_WIDTH, runSummaryLines, wrap } from '../../bench/ttfp/report/runSummary.ts';
import { toRunRow, type BenchResult, type RunRow } from '../../bench/ttfp/results.ts';

/** A run of two requests, each with this TTFP, built through the real aggregation. */
function run(asyncChunk: boolean, concurrency: number, ttfpMs: number): RunRow {
  const traces = [0, 1].map(() => ({
    startMs: 0,
    ok: true,
    events: [
      { type: 'text' as const, atMs: 10 },
      { type: 'text' as const, atMs: 14 },
      { type: 'audio' as const, atMs: ttfpMs, samples: 2400, sampleRateHz: 24_000 },
      { type: 'audio' as const, atMs: ttfpMs + 1, samples: 24_000, sampleRateHz: 24_000 },
      { type: 'done' as const, atMs: ttfpMs + 5 },
    ],
  }));
  const row = toRunRow(summarizeRun(traces), {
    asyncChunk,
    concurrency,
    inputLen: 100,
    outputLen: 100,
    code2wavBatch: 16,
    durationMs: 1000,
    traces,
  });
  // CPU per request by process: the longest line of the old report (over 200 columns).
  return {
    ...row,
    cpu_ms_per_request: { 'thinker#0': 205, 'talker#0': 348, 'code2wav#0': 52.5, bench: 138 },
    cpu_bound_rps: 2.67,
  };
}

const limit = {
  batch: 1,
  prompt_tokens: 112,
  input_len: 100,
  initial_chunk_frames: 3,
  thinker_decode_steps: 1,
  talker_decode_steps: 2,
  repeats: 20,
  median: {
    thinker_prefill_ms: 5,
    thinker_decode_ms: 1,
    talker_prefill_ms: 10,
    talker_decode_ms: 4,
    code2wav_ms: 12,
    total_ms: 32,
  },
  p99_total_ms: 40,
  min_total_ms: 30,
} as LimitResult;

function result(): BenchResult {
  const runs = [run(true, 1, 40), run(true, 10, 300), run(false, 1, 1000), run(false, 10, 2000)];
  const ratios = asyncSyncRatios(runs);
  const throughput = [
    {
      batch: 10,
      best_batch: 10,
      limit_rps: 6,
      batched_rps: 6,
      cores: 2,
      repeats: 5,
      warmup: 1,
      thinker_ms: 500,
      talker_ms: 1000,
      code2wav_ms: 100,
    } as ThroughputLimit,
  ];
  return {
    tool: 'chorus bench',
    started_at: '2026-11-27T20:53:13.622Z',
    finished_at: '2026-11-27T20:54:13.622Z',
    command: 'chorus bench --compare-sync',
    git_sha: 'f7e1663ea495f7e1663ea495f7e1663ea495f7e1',
    machine: {
      node: 'v20.20.2',
      platform: 'linux',
      cpu_model: 'AMD EPYC 7B13 64-Core Processor with a very long model name',
      cpus: 2,
      memory_gib: 23.5,
      load_avg_start: 1,
      load_avg_end: 2,
    },
    target: { kind: 'config', file: '/work/main/configs/tiny-omni.yaml' },
    config_sha256: { async: 'a'.repeat(64), sync: 'b'.repeat(64) },
    remote_stages: {},
    options: {
      protocol: 'realtime',
      concurrency: [1, 10],
      num_prompts: 2,
      input_len: 100,
      output_len: 100,
      warmup: 2,
      seed: 0,
      initial_codec_chunk_frames: null,
      ttfp_target_ms: null,
      interleaved: true,
    },
    limit,
    burst_limits: [],
    throughput_limits: throughput,
    runs,
    ratios,
    config_ratios: [],
    goals: evaluateGoals(runs, ratios, limit, [], [], throughput),
  };
}

describe('the terminal report', () => {
  const r = result();
  const text = formatText(r);
  const lines = text.split('\n');

  it('fits a 100-column terminal, every line', () => {
    const wide = lines.filter((l) => l.length > REPORT_WIDTH);
    expect(wide).toEqual([]);
    expect(
      formatText(r, { goals: true })
        .split('\n')
        .filter((l) => l.length > REPORT_WIDTH),
    ).toEqual([]);
  });

  it('prints one labelled summary per run, with its figures', () => {
    const summary = runSummaryLines(r.runs[0]);
    expect(summary[0]).toContain('async_chunk on, max concurrency 1');
    const value = (label: string) => {
      const line = summary.find((l) => l.startsWith(`${label}:`));
      expect(line, label).toBeDefined();
      return line!.slice(label.length + 1).trim();
    };
    expect(value('Successful requests')).toBe('2');
    expect(value('Failed requests')).toBe('0');
    expect(value('Benchmark duration (s)')).toBe('1.00');
    expect(value('Request throughput (req/s)')).toBe('2.00');
    expect(value('Mean TTFT (ms)')).toBe('10.0');
    expect(value('Median TTFP (ms)')).toBe('40.0');
    expect(value('P99 TTFP (ms)')).toBe('40.0');
    expect(value('Mean ITL (ms)')).toBe('4.00');
    for (const label of ['Median TTFT (ms)', 'P99 TTFT (ms)', 'Median ITL (ms)', 'P99 ITL (ms)', 'Underruns']) {
      expect(
        summary.some((l) => l.startsWith(label)),
        label,
      ).toBe(true);
    }
    // Each of the four runs has its block, in the order they are listed.
    const titles = lines.filter((l) => l.startsWith('=') && l.includes('max concurrency'));
    expect(titles.map((t) => t.replace(/=/g, '').trim())).toEqual([
      'async_chunk on, max concurrency 1',
      'async_chunk on, max concurrency 10',
      'async_chunk off, max concurrency 1',
      'async_chunk off, max concurrency 10',
    ]);
  });

  it('names every ratio in words', () => {
    expect(text).toContain('async_chunk on as a multiple of off');
    expect(text).toContain('c=1: mean TTFP 0.04x (p50 0.04x), mean TTFT 1.00x');
    expect(text).toMatch(/mean TTFP 40\.0 ms is 1\.25x the limit of 32\.0 ms/);
    expect(text).toContain('the run measured 2.00 req/s (0.75 of it)');
    expect(text).not.toMatch(/measured [\d.]+ \([\d.]+\)/); // the old "measured 0.99 (0.40)"
  });

  it('leaves the development goals out unless asked for, and never shouts MISSED', () => {
    expect(r.goals.length).toBeGreaterThan(0);
    expect(text).not.toContain('goal');
    const withGoals = formatText(r, { goals: true });
    expect(withGoals).toContain('development goals (bench/README.md):');
    expect(withGoals).toContain('TTFP async/sync at c=10: 0.150 (goal <= 0.1, not met)');
    expect(withGoals).not.toContain('MISSED');
    expect(formatMarkdown(r)).not.toContain('goal <=');
    expect(formatMarkdown(r, { goals: true })).toContain('TTFP async/sync at c=1: 0.040 (goal <= 0.05, met)');
  });

  it('keeps the wide tables for results.md only', () => {
    expect(text).not.toMatch(/Input +Output +async_chunk/);
    expect(text).not.toContain('TTFP p50 / p99');
    expect(text).toContain('results.md');
    const md = formatMarkdown(r);
    expect(md).toContain('| Input | Output | async_chunk |');
    expect(md).toContain('TTFP p50 / p99');
  });
});

describe('wrap', () => {
  it('breaks at spaces within the width and indents what follows, keeping the first line`s indentation', () => {
    const text = `  ${Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')}`;
    const out = wrap(text, 50);
    expect(out.length).toBeGreaterThan(1);
    for (const l of out) expect(l.length).toBeLessThanOrEqual(50);
    expect(out[0].startsWith('  word0 ')).toBe(true);
    for (const l of out.slice(1)) expect(l.startsWith('      word')).toBe(true);
    expect(out.join(' ').split(/ +/).filter(Boolean)).toEqual(text.trim().split(' '));
    expect(wrap('short')).toEqual(['short']);
  });
});

describe('the bench logger', () => {
  it('writes a warning as a plain line, its context after it', () => {
    const record = JSON.stringify({
      level: 40,
      time: 1,
      pid: 3,
      name: 'chorus',
      component: 'orchestrator',
      file: 'x.yaml',
      msg: 'threads exceed cores',
      stage: 'talker',
    });
    expect(plainLogLine(record)).toBe('warning: threads exceed cores (stage=talker)');
    expect(plainLogLine(JSON.stringify({ level: 30, msg: 'started' }))).toBe('started');
    expect(plainLogLine('not json\n')).toBe('not json');
  });

  it('is a pino logger whose records reach the stream as those lines', () => {
    const written: string[] = [];
    const log = benchLogger({ write: (s: string) => written.push(s) } as unknown as NodeJS.WritableStream, 'warn');
    log.child({ component: 'bench' }).info('hidden at warn');
    log.warn({ err: new Error('boom') }, 'a request failed');
    expect(written).toEqual(['warning: a request failed (err=boom)\n']);
  });
});
