/**
 * `chorus bench --turns` arithmetic on hand-made traces: per turn index the p50s over conversations, the cached
 * share, turn k over turn 1, failures counted and named, and two modes' ratio by turn. Every expected number is
 * worked out by hand from the definitions, not read back from the code.
 */
import { describe, expect, it } from 'vitest';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';
import { formatTurns } from '../../bench/ttfp/turns/formatTurns.ts';
import type { TurnsResult, TurnsRun } from '../../bench/ttfp/turns/turnsResult.ts';
import {
  computedPositions,
  displayedTurns,
  modeRatios,
  systemComputedTimes,
  turnRatios,
  turnRows,
} from '../../bench/ttfp/turns/turnStats.ts';

/** A turn sent at 0 with its first text at ttft, first audio at ttfp, and the usage the server reported. */
function turn(ttftMs: number, ttfpMs: number, promptTokens: number, cachedTokens: number): RequestTrace {
  return {
    startMs: 1000,
    events: [
      { type: 'text', atMs: 1000 + ttftMs },
      { type: 'audio', atMs: 1000 + ttfpMs, samples: 2400, sampleRateHz: 24_000 },
      { type: 'done', atMs: 1000 + ttfpMs + 10 },
    ],
    ok: true,
    promptTokens,
    cachedTokens,
  };
}
const failed = (error: string): RequestTrace => ({ startMs: 0, events: [], ok: false, error });

describe('turnRows', () => {
  // Three conversations of three turns; conversation 2's turn 3 failed.
  const traces = [
    [turn(10, 100, 60, 0), turn(20, 150, 130, 64), turn(40, 300, 200, 128)],
    [turn(30, 120, 60, 0), turn(40, 200, 130, 128), turn(60, 500, 200, 192)],
    [turn(20, 110, 60, 0), turn(30, 160, 130, 64), failed('response failed: CHORUS_ERR_X too long')],
  ];
  const rows = turnRows(traces);

  it('has one row per turn index, numbered from 1', () => {
    expect(rows.map((r) => r.turn)).toEqual([1, 2, 3]);
    expect(rows.map((r) => [r.conversations, r.completed, r.failed])).toEqual([
      [3, 3, 0],
      [3, 3, 0],
      [3, 2, 1],
    ]);
  });

  it('takes p50 (and mean) TTFT and TTFP over the conversations at each turn', () => {
    expect(rows.map((r) => r.p50_ttft_ms)).toEqual([20, 30, 50]); // turn 3: p50 of 40 and 60
    expect(rows.map((r) => r.p50_ttfp_ms)).toEqual([110, 160, 400]);
    expect(rows[1].mean_ttft_ms).toBe(30);
    expect(rows[2].p99_ttfp_ms).toBeCloseTo(300 + 0.99 * 200, 9);
  });

  it('reports turn k over turn 1 of the p50s', () => {
    expect(rows.map((r) => r.ttft_over_turn1)).toEqual([1, 1.5, 2.5]);
    expect(rows[1].ttfp_over_turn1).toBeCloseTo(160 / 110, 12);
    expect(rows[2].ttfp_over_turn1).toBeCloseTo(400 / 110, 12);
  });

  it('averages input and cached tokens over answered turns; the cached share is their sums', () => {
    expect(rows.map((r) => r.mean_input_tokens)).toEqual([60, 130, 200]);
    expect(rows.map((r) => r.mean_cached_tokens)).toEqual([0, 256 / 3, 160]);
    expect(rows.map((r) => r.cached_share)).toEqual([0, 256 / 390, 320 / 400]);
  });

  it("keeps the failed turns' errors, once each", () => {
    expect(rows[2].errors).toEqual(['response failed: CHORUS_ERR_X too long']);
    const twice = turnRows([[failed('boom')], [failed('boom')], [turn(1, 2, 3, 0)]]);
    expect(twice[0]).toMatchObject({ completed: 1, failed: 2, errors: ['boom'] });
  });

  it('leaves figures nobody reported null: no usage, no audio, a turn where everything failed', () => {
    const noUsage: RequestTrace = { startMs: 0, events: [{ type: 'text', atMs: 5 }], ok: true };
    const [only, allFailed] = turnRows([[noUsage, failed('x')]]);
    expect(only).toMatchObject({ mean_input_tokens: null, cached_share: null, p50_ttfp_ms: null, p50_ttft_ms: 5 });
    expect(only.ttfp_over_turn1).toBeNull();
    expect(allFailed).toMatchObject({ completed: 0, failed: 1, p50_ttft_ms: null, ttft_over_turn1: null });
  });

  it('counts a turn index over the conversations that reached it', () => {
    const rowsOfUneven = turnRows([[turn(1, 2, 3, 0)], [turn(1, 2, 3, 0), turn(2, 4, 6, 3)]]);
    expect(rowsOfUneven.map((r) => r.conversations)).toEqual([2, 1]);
  });
});

describe('two modes by turn', () => {
  const run = (variant: string, traces: RequestTrace[][]): TurnsRun => ({
    variant,
    async_chunk: true,
    scheduling: null,
    concurrency: 1,
    conversations: traces.length,
    turns_per_conversation: traces[0].length,
    completed: traces.flat().filter((t) => t.ok).length,
    failed: traces.flat().filter((t) => !t.ok).length,
    duration_s: 1,
    blocks: 2,
    computed_positions: computedPositions(traces.flat()),
    system_computed_times: null,
    turns: turnRows(traces),
  });
  const cached = run('cache', [[turn(10, 100, 60, 0), turn(12, 110, 130, 128)]]);
  const off = run('nocache', [[turn(10, 100, 60, 0), turn(40, 440, 130, 0)]]);

  it("divides the first mode's p50s by the second's at each turn", () => {
    expect(turnRatios(cached.turns, off.turns)).toEqual([
      { turn: 1, ttft: 1, ttfp: 1 },
      { turn: 2, ttft: 0.3, ttfp: 0.25 },
    ]);
    expect(modeRatios([cached, off], 'cache', 'nocache')).toEqual([
      { concurrency: 1, variant: 'cache', over_variant: 'nocache', turns: turnRatios(cached.turns, off.turns) },
    ]);
  });

  it('prints each run by turn, then both side by side with the ratio', () => {
    const result = {
      command: 'test',
      started_at: '2026-11-27T00:00:00.000Z',
      git_sha: 'abc',
      machine: { node: 'v20', cpus: 2, cpu_model: 'cpu', load_avg_start: 0, load_avg_end: 0 },
      options: { protocol: 'realtime', turns: 2, input_len: 40, output_len: 10, warmup: 0, seed: 0 },
      runs: [cached, off],
      ratios: modeRatios([cached, off], 'cache', 'nocache'),
    } as unknown as TurnsResult;
    const text = formatTurns(result);
    expect(text).toContain('cache, realtime, c=1: 1 conversations x 2 turns, 2 answered, 0 failed');
    expect(text).toContain('cache / nocache by turn, c=1');
    // Turn 2 side by side: input 130 in both, cached 98% / 0%, TTFT 12 / 40 (0.30), TTFP 110 / 440 (0.25).
    expect(text).toContain('| 2 | 130 / 130 | 98% / 0% | 12.0 / 40.0 | 0.30 | 110 / 440 | 0.25 |');
    // Computed: cache 60 + (130 - 128) = 62 positions; no cache 60 + 130 = 190.
    expect(text).toContain('cache, realtime, c=1: 1 conversations x 2 turns, 2 answered, 0 failed, 1.0 s, 62 prompt');
    expect(text).toContain(
      'nocache, realtime, c=1: 1 conversations x 2 turns, 2 answered, 0 failed, 1.0 s, 190 prompt',
    );
  });
});

describe('a shared system prompt', () => {
  it('counts how many times the server computed it: what it computed beyond each request own part', () => {
    // 4 requests of 1,000 system + 30 own tokens; two computed everything (one per instance), two reused 992.
    const traces = [turn(1, 2, 1030, 0), turn(1, 2, 1030, 0), turn(1, 2, 1030, 992), turn(1, 2, 1030, 992)];
    expect(computedPositions(traces)).toBe(2 * 1030 + 2 * 38);
    // 2,136 computed - 4 x 30 own = 2,016 = 2.016 system prompts.
    expect(systemComputedTimes(traces, 1000)).toBeCloseTo(2.016, 6);
    // The template's tokens after the system prompt are shared too: one reused 1,008 (more than the 1,000). The
    // shared part is 1,008, each request's own 22: 1,030 + 3 x 22 = 1,096 computed - 4 x 22 = 1,008: once.
    const once = [turn(1, 2, 1030, 0), turn(1, 2, 1030, 1008), turn(1, 2, 1030, 1008), turn(1, 2, 1030, 1008)];
    expect(systemComputedTimes(once, 1000)).toBe(1);
    expect(systemComputedTimes([failed('x')], 1000)).toBeNull();
    expect(computedPositions([failed('x')])).toBeNull();
  });
});

describe('displayedTurns', () => {
  it('shows every turn of a short conversation, and 1, 2, 5, 10, 20, ... and the last of a long one', () => {
    expect(displayedTurns(1)).toEqual([1]);
    expect(displayedTurns(12)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(displayedTurns(20)).toEqual([1, 2, 5, 10, 20]);
    expect(displayedTurns(40)).toEqual([1, 2, 5, 10, 20, 40]);
    expect(displayedTurns(200)).toEqual([1, 2, 5, 10, 20, 50, 100, 200]);
  });
});
