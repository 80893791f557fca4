/**
 * The report of `chorus bench` (formatReport: results.md, and the terminal prints the same): a table row per run,
 * ratios in words, goals only when asked for (--goals); and the bench's log lines as plain text.
 */
import { describe, expect, it } from 'vitest';
import { benchLogger, plainLogLine } from '../../bench/benchLogger.ts';
import type { LimitResult } from '../../bench/limit/limitResult.ts';
import type { ThroughputLimit } from '../../bench/limit/throughputLimit.ts';
import { asyncSyncRatios, evaluateGoals } from '../../bench/ttfp/goals.ts';
import { summarizeRun } from '../../bench/ttfp/metrics.ts';
import { formatReport } from '../../bench/ttfp/report/formatReport.ts';
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
    goals: evaluateGoals(runs, ratios, limit, throughput),
  };
}

describe('the report (results.md, and what the terminal prints)', () => {
  const r = result();
  const md = formatReport(r);
  /** The cells of the table row that starts with these cells. */
  const rowOf = (table: number, ...first: string[]) => {
    const rows = md.split('\n\n')[table].split('\n');
    const row = rows.find((l) => l.startsWith(`| ${first.join(' | ')} |`));
    expect(row, first.join(' ')).toBeDefined();
    const cellsOf = (l: string) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim());
    const headers = cellsOf(rows[0]);
    const cells = cellsOf(row!);
    return (header: string) => cells[headers.indexOf(header)];
  };

  it('holds one row per run in each table, with its figures', () => {
    const mean = rowOf(3, '100', '100', 'true', '16', '1');
    expect(mean('Prompts')).toBe('2');
    expect(mean('Mean TTFT (ms)')).toBe('10.0');
    expect(mean('Mean ITL (ms)')).toBe('4.00');
    expect(mean('Underruns')).toBe('0');
    const p = rowOf(4, 'true', '1');
    expect(p('TTFP p50 / p99')).toBe('40.0 / 40.0');
    expect(p('Duration (s)')).toBe('1.00');
    expect(p('Req/s')).toBe('2.00');
    expect(p('Requests with an underrun')).toBe('0');
    for (const table of [3, 4]) expect(md.split('\n\n')[table].split('\n')).toHaveLength(2 + r.runs.length);
  });

  it('names every ratio in words', () => {
    expect(md).toContain('async_chunk on as a multiple of off');
    expect(md).toContain('c=1: mean TTFP 0.04x (p50 0.04x), mean TTFT 1.00x');
    expect(md).toMatch(/mean TTFP 40\.0 ms is 1\.25x the limit of 32\.0 ms/);
    expect(md).toContain('the run measured 2.00 req/s (0.75 of it)');
    expect(md).not.toMatch(/measured [\d.]+ \([\d.]+\)/); // the old "measured 0.99 (0.40)"
  });

  it("names the c=1 limit's measures over the run when it has them, and that the limit is all packets' median", () => {
    expect(md).not.toContain('before the runs');
    const twice = formatReport({ ...r, limit_measures_ms: [41.5, 32] });
    expect(twice).toContain('Measured 41.50 ms before the runs and 32.00 ms after them');
    expect(twice).toContain(`the limit is the median of all ${r.limit!.repeats} packets`);
    const between = formatReport({ ...r, limit_measures_ms: [41.5, 35, 36.25, 32] });
    expect(between).toContain(
      'Measured 41.50 ms before the runs, 35.00, 36.25 ms between the c=1 blocks and 32.00 ms after',
    );
    expect(between).not.toContain('CPU a packet in each');
    const cpu = formatReport({ ...r, limit_measures_ms: [41.5, 32], limit_measures_cpu_ms: [30.5, 31] });
    expect(cpu).toContain("median of all 20 packets. The process's CPU a packet in each: 30.50, 31.00 ms.");
  });

  it("says when the limit is the median of the packets beside the c=1 blocks, and gives the whole run's", () => {
    const whole = { ...r.limit!, repeats: 60, median: { ...r.limit!.median, total_ms: 24.25 } };
    const beside = formatReport({
      ...r,
      limit: { ...r.limit!, repeats: 40 },
      limit_whole_run: whole,
      limit_measures_ms: [23.5, 33, 31, 32.5, 34, 23],
      limit_measures_beside: [false, true, true, true, true, false],
    });
    expect(beside).toContain('33.00, 31.00, 32.50, 34.00 ms beside the c=1 blocks (right before and after each)');
    expect(beside).toContain('the limit is the median of the 40 packets beside the c=1 blocks, the machine of their');
    expect(beside).toContain("(the whole run's 60: 24.25 ms)");
    expect(beside).not.toContain('median of all');
  });

  it('leaves the development goals out unless asked for, and never shouts MISSED', () => {
    expect(r.goals.length).toBeGreaterThan(0);
    expect(md).not.toContain('goal');
    const withGoals = formatReport(r, { goals: true });
    expect(withGoals).toContain('**Development goals (bench/README.md)**');
    expect(withGoals).toContain('TTFP async/sync at c=10: 0.150 (goal <= 0.1, not met)');
    expect(withGoals).toContain('TTFP async/sync at c=1: 0.040 (goal <= 0.07, met)');
    expect(withGoals).not.toContain('MISSED');
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
