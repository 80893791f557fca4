/**
 * What the bench reports from its runs: async/sync ratios, the goals, the tables, the SVG plot, and the sync
 * variant of a config (only async_chunk changes).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { addFrames, decodeRatio, framesBetween, sumMetric } from '../../bench/ttfp/code2wavFrames.ts';
import { asyncSyncRatios, evaluateGoals, throughputCeilingAt, throughputShare } from '../../bench/ttfp/goals.ts';
import type { ThroughputLimit } from '../../bench/limit/throughputLimit.ts';
import { withOverrides } from '../../bench/ttfp/inProcessServer.ts';
import type { LimitResult } from '../../bench/limit/limitResult.ts';
import { renderMarkdown } from '../../bench/report/format.ts';
import { meanColumns } from '../../bench/ttfp/report/tables.ts';
import { summarizeRun } from '../../bench/ttfp/metrics.ts';
import { toRunRow, type RunRow } from '../../bench/ttfp/results.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { defaultConfigPath } from '../../src/config/paths.ts';

/** A run whose every request had this TTFP (ms), E2E and RTF, built through the real aggregation. */
function run(asyncChunk: boolean, concurrency: number, ttfpMs: number, stallAtMs: number | null = null): RunRow {
  const traces = [0, 1].map(() => ({
    startMs: 0,
    ok: true,
    events: [
      { type: 'text' as const, atMs: 10 },
      { type: 'audio' as const, atMs: ttfpMs, samples: 2400, sampleRateHz: 24_000 }, // 100 ms
      { type: 'audio' as const, atMs: stallAtMs ?? ttfpMs + 1, samples: 24_000, sampleRateHz: 24_000 },
      { type: 'done' as const, atMs: (stallAtMs ?? ttfpMs) + 5 },
    ],
  }));
  return toRunRow(summarizeRun(traces), {
    asyncChunk,
    concurrency,
    inputLen: 100,
    outputLen: 100,
    code2wavBatch: 16,
    durationMs: 1000,
    traces,
  });
}

const limit = (totalMs: number) => ({ median: { total_ms: totalMs } }) as LimitResult;

describe('asyncSyncRatios and evaluateGoals', () => {
  const runs = [run(true, 1, 40), run(true, 10, 300, 600), run(false, 1, 1000), run(false, 10, 2000)];
  const ratios = asyncSyncRatios(runs);

  it('pairs async and sync runs of the same concurrency', () => {
    expect(ratios.map((r) => [r.concurrency, r.ttfp_async_over_sync])).toEqual([
      [1, 0.04],
      [10, 0.15],
    ]);
  });

  it('reports each goal with its value and whether it was met', () => {
    const goals = evaluateGoals(runs, ratios, limit(32));
    expect(goals).toEqual([
      { name: 'TTFP async/sync at c=1', value: 0.04, target: '<= 0.07', met: true },
      { name: 'TTFP async/sync at c=10', value: 0.15, target: '<= 0.1', met: false },
      // Issue 46: E2E (the done event) async over sync at c=1 and c=10; TTFP over the limit by p50 and by mean.
      { name: 'E2E async/sync at c=1', value: 45 / 1005, target: '<= 1', met: true },
      { name: 'E2E async/sync at c=10', value: 605 / 2005, target: '<= 1', met: true },
      { name: 'TTFP/limit at c=1 (p50)', value: 40 / 32, target: '<= 1.15', met: false },
      { name: 'TTFP/limit at c=1 (mean)', value: 40 / 32, target: '<= 1.25', met: true },
      // Second chunk 200 ms after the first 100 ms ran out, in each of the two requests.
      { name: 'underruns at c=10', value: 2, target: '= 0', met: false },
    ]);
  });

  it('leaves out goals it has no data for', () => {
    expect(evaluateGoals([run(true, 4, 50)], [], null)).toEqual([]);
  });

  it('reports the worst Code2Wav decode ratio of --config`s async runs against 1.05', () => {
    const at = (c: number, ratio: number | null): RunRow => ({ ...run(true, c, 50), code2wav_decode_ratio: ratio });
    expect(evaluateGoals([at(1, 1), at(4, 1.04), at(2, null)], [], null)).toEqual([
      { name: 'Code2Wav frames decoded per audio frame (worst run)', value: 1.04, target: '<= 1.05', met: true },
    ]);
    expect(evaluateGoals([at(1, 1), at(4, 1.96)], [], null)[0]).toMatchObject({ value: 1.96, met: false });
    expect(evaluateGoals([at(1, null)], [], null)).toEqual([]);
  });

  it('reads the decode ratio from two /metrics scrapes, summed over Code2Wav instances', () => {
    const text = (decoded: number, audio: number) =>
      [
        '# HELP chorus_code2wav_frames_decoded_total Codec frames',
        '# TYPE chorus_code2wav_frames_decoded_total counter',
        `chorus_code2wav_frames_decoded_total{stage="code2wav#0"} ${decoded}`,
        `chorus_code2wav_frames_decoded_total{stage="code2wav#1"} 10`,
        `chorus_code2wav_frames_decoded_total_extra 999`,
        `chorus_code2wav_audio_frames_total{stage="code2wav#0"} ${audio}`,
        `chorus_code2wav_audio_frames_total{stage="code2wav#1"} 10`,
      ].join('\n');
    const scrape = (decoded: number, audio: number) => ({
      framesDecoded: sumMetric(text(decoded, audio), 'chorus_code2wav_frames_decoded_total'),
      audioFrames: sumMetric(text(decoded, audio), 'chorus_code2wav_audio_frames_total'),
    });
    expect(scrape(40, 20)).toEqual({ framesDecoded: 50, audioFrames: 30 });
    expect(decodeRatio(framesBetween(scrape(40, 20), scrape(240, 120)))).toBe(2);
    expect(decodeRatio(framesBetween(scrape(40, 20), scrape(40, 20)))).toBeNull(); // no audio in between
    expect(decodeRatio(framesBetween(null, scrape(40, 20)))).toBeNull(); // a server without /metrics
    // A run measured in two blocks: the ratio of the sums, not the mean of the ratios.
    const blocks = addFrames(
      framesBetween(scrape(0, 0), scrape(20, 20)),
      framesBetween(scrape(20, 20), scrape(320, 120)),
    );
    expect(decodeRatio(blocks)).toBe(320 / 120);
    expect(addFrames(blocks, null)).toBeNull(); // one block without /metrics: no ratio for the run
  });

  it('compares req/s at c=10 with the throughput limit of 10 requests', () => {
    const row = { ...run(true, 10, 300), request_throughput: 3 };
    const limit = { batch: 10, limit_rps: 6 } as ThroughputLimit;
    expect(throughputShare([row], [limit], 10)).toBe(0.5);
    expect(evaluateGoals([row], [], null, [limit]).at(-1)).toEqual({
      name: 'req/s at c=10 over the throughput limit',
      value: 0.5,
      target: '>= 0.9',
      met: false,
    });
    expect(throughputShare([row], [{ ...limit, batch: 4 }], 10)).toBeNull(); // no limit at that concurrency
  });

  it("puts the bench's CPU beside the stages' times alone: the share of the throughput limit the cores allow", () => {
    // 10 requests at batch 10: stages 1000 + 500 + 100 ms alone, limit 6 req/s on 2 cores. The run spent 100 ms
    // of the bench process's CPU (main and clients) per request: 2000 / (160 + 100) = 7.7 req/s > 6, the limit stays
    // whole; at 200 ms a request, 2000 / 360 = 5.56 req/s, 0.93 of it.
    const limit = {
      batch: 10,
      best_batch: 10,
      limit_rps: 6,
      cores: 2,
      thinker_ms: 500,
      talker_ms: 1000,
      code2wav_ms: 100,
    } as ThroughputLimit;
    const row = (benchMs: number, counted: boolean): RunRow => ({
      ...run(true, 10, 300),
      cpu_ms_per_request: { 'talker#0': 250, bench: benchMs },
      cpu_bound_rps: counted ? 2000 / (250 + benchMs) : null,
    });
    expect(throughputCeilingAt([row(100, true)], [limit], 10)).toBe(1);
    expect(throughputCeilingAt([row(200, true)], [limit], 10)).toBeCloseTo(2000 / 360 / 6, 6);
    // A server reached by URL: main's CPU was not counted, so no ceiling is claimed.
    expect(throughputCeilingAt([row(200, false)], [limit], 10)).toBeNull();
    // The limit came from a smaller batch: its stage times are the ones that count (560 ms a request at batch 10's
    // would give 0.595).
    const four = { ...limit, batch: 4, thinker_ms: 100, talker_ms: 200, code2wav_ms: 20 } as ThroughputLimit;
    const ceiling = throughputCeilingAt([row(400, true)], [four, { ...limit, best_batch: 4 }], 10);
    expect(ceiling).toBeCloseTo(2000 / (80 + 400) / 6, 6);
  });

  it('reports the share of requests that met a TTFP target', () => {
    const traces = [30, 50, 70, 90].map((ttfpMs) => ({
      startMs: 0,
      ok: true,
      events: [
        { type: 'audio' as const, atMs: ttfpMs, samples: 2400, sampleRateHz: 24_000 },
        { type: 'done' as const, atMs: ttfpMs + 5 },
      ],
    }));
    const row = (ttfpTargetMs: number) =>
      toRunRow(summarizeRun(traces), {
        asyncChunk: true,
        concurrency: 4,
        inputLen: 100,
        outputLen: 100,
        code2wavBatch: 16,
        durationMs: 1000,
        traces,
        ttfpTargetMs,
      });
    expect([row(60).ttfp_target_met, row(80).ttfp_target_met, row(90).ttfp_target_met]).toEqual([0.5, 0.75, 1]);
  });
});

describe('tables', () => {
  const rows = [run(true, 1, 40), run(false, 1, 1000)];

  it('renders Markdown with a header, a separator and one row per run', () => {
    const lines = renderMarkdown(meanColumns, rows).split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toContain('Mean TTFP (ms)');
    expect(lines[1]).toMatch(/^\|( ---: \|)+$/);
    expect(lines[2]).toContain('40.0');
    expect(lines[3].split('|').length).toBe(meanColumns.length + 2);
  });
});

describe('withOverrides', () => {
  it('changes only async_chunk, so the sync run uses the same models and settings', () => {
    const file = defaultConfigPath();
    const text = readFileSync(file, 'utf8');
    const sync = withOverrides(text, { async_chunk: false }, file);
    const [a, s] = [parseConfig(text, file), parseConfig(sync, file)];
    expect(a.asyncChunk).toBe(true);
    expect(s.asyncChunk).toBe(false);
    expect({ ...s, asyncChunk: true, warnings: [], configHash: a.configHash }).toEqual({ ...a, warnings: [] });
    expect(sync).toContain('# tiny-omni'); // comments survive
  });

  it('adds the key when the file leaves it to the default', () => {
    const file = defaultConfigPath();
    const text = readFileSync(file, 'utf8').replace(/^async_chunk:.*$/m, '');
    expect(parseConfig(withOverrides(text, { async_chunk: false }, file), file).asyncChunk).toBe(false);
  });

  it('sets the scheduling policy for the fifo variant of --compare-scheduling', () => {
    const file = defaultConfigPath();
    const text = readFileSync(file, 'utf8');
    const [a, f] = [parseConfig(text, file), parseConfig(withOverrides(text, { scheduling: 'fifo' }, file), file)];
    const p = parseConfig(withOverrides(text, { scheduling: 'playback' }, file), file);
    expect([a.scheduling, f.scheduling, p.scheduling]).toEqual(['fifo', 'fifo', 'playback']);
    expect({ ...p, scheduling: 'fifo', warnings: [], configHash: a.configHash }).toEqual({ ...a, warnings: [] });
  });
});
