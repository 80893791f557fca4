/**
 * The per-turn limit of `chorus bench --turns`, its pure parts: what each turn's limit computes from the run's usage
 * (Thinker cached and new positions, the Talker's cached rows estimated from the previous turn's prompt), the limit
 * beside the turn's TTFP, and the report's columns. Expected numbers are worked out by hand.
 */
import { describe, expect, it } from 'vitest';
import type { LimitParts } from '../../bench/limit/limitResult.ts';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';
import { formatTurns } from '../../bench/ttfp/turns/formatTurns.ts';
import {
  limitRows,
  planTurnLimits,
  worstTurn,
  type TurnLimit,
  type TurnLimits,
} from '../../bench/ttfp/turns/turnLimitPlan.ts';
import type { TurnsResult, TurnsRun } from '../../bench/ttfp/turns/turnsResult.ts';
import { turnRows } from '../../bench/ttfp/turns/turnStats.ts';

function turn(ttfpMs: number, promptTokens: number, cachedTokens: number): RequestTrace {
  return {
    startMs: 1000,
    events: [
      { type: 'text', atMs: 1000 + ttfpMs / 2 },
      { type: 'audio', atMs: 1000 + ttfpMs, samples: 2400, sampleRateHz: 24_000 },
      { type: 'done', atMs: 1000 + ttfpMs + 10 },
    ],
    ok: true,
    promptTokens,
    cachedTokens,
  };
}
const failed: RequestTrace = { startMs: 0, events: [], ok: false, error: 'boom' };

describe('planTurnLimits', () => {
  // Two conversations of five turns: the p50 of two values is their mean. Turn 4 failed everywhere (no usage);
  // turn 5 reported its whole input cached.
  const rows = turnRows([
    [turn(100, 59, 0), turn(120, 140, 64), turn(130, 221, 144), failed, turn(150, 400, 400)],
    [turn(100, 59, 0), turn(140, 140, 96), turn(130, 221, 144), failed, turn(150, 400, 400)],
  ]);

  it("takes the p50 input and cached tokens, and the previous turn's prompt in whole blocks for the Talker", () => {
    expect(planTurnLimits(rows, [1, 2, 3, 4, 5], 16)).toEqual([
      { turn: 1, input_tokens: 59, cached_tokens: 0, talker_cached_rows: 0 },
      // cached p50 (64 + 96) / 2 = 80; the Talker: floor(59 / 16) * 16 = 48 rows of turn 1's prompt.
      { turn: 2, input_tokens: 140, cached_tokens: 80, talker_cached_rows: 48 },
      // floor(140 / 16) * 16 = 128.
      { turn: 3, input_tokens: 221, cached_tokens: 144, talker_cached_rows: 128 },
      // Turn 4: no usage, no plan. Turn 5: the last prompt position always runs (400 -> 399 cached); the Talker
      // has turn 3's prompt (turn 4 was refused): floor(221 / 16) * 16 = 208.
      { turn: 5, input_tokens: 400, cached_tokens: 399, talker_cached_rows: 208 },
    ]);
  });

  it('measures only the turns asked for', () => {
    expect(planTurnLimits(rows, [1, 3], 16).map((p) => p.turn)).toEqual([1, 3]);
  });

  it('never gives the Talker more cached rows than the Thinker adopted, and none when its cache is off', () => {
    const evicted = turnRows([[turn(100, 200, 0), turn(100, 300, 40)]]);
    // The previous prompt is 192 rows in whole blocks, but only 40 Thinker positions were adopted: 32 rows.
    expect(planTurnLimits(evicted, [2], 16)[0].talker_cached_rows).toBe(32);
    expect(planTurnLimits(rows, [2, 3], null).map((p) => p.talker_cached_rows)).toEqual([0, 0]);
  });

  it("gives turn 1 the Thinker's cached prefix in whole blocks (a prompt start other requests computed)", () => {
    const shared = turnRows([[turn(100, 59, 20)]]);
    expect(planTurnLimits(shared, [1], 16)).toEqual([
      { turn: 1, input_tokens: 59, cached_tokens: 20, talker_cached_rows: 16 },
    ]);
  });
});

const parts = (totalMs: number): LimitParts => ({
  thinker_prefill_ms: totalMs / 2,
  thinker_decode_ms: 0,
  talker_prefill_ms: totalMs / 4,
  talker_decode_ms: totalMs / 8,
  code2wav_ms: totalMs / 8,
  total_ms: totalMs,
});

function limitOf(turnIndex: number, input: number, cached: number, talkerCached: number, totalMs: number): TurnLimit {
  return {
    turn: turnIndex,
    input_tokens: input,
    cached_tokens: cached,
    talker_cached_rows: talkerCached,
    thinker_new_positions: input - cached,
    talker_new_rows: input - talkerCached,
    median: parts(totalMs),
    min_total_ms: totalMs,
  };
}

describe('limitRows and worstTurn', () => {
  const rows = turnRows([[turn(100, 59, 0), turn(130, 140, 96), failed]]);
  const limits = [limitOf(1, 59, 0, 0, 40), limitOf(2, 140, 96, 48, 65), limitOf(3, 221, 144, 128, 50)];

  it("sets each limit beside the turn's TTFP p50: TTFP / limit", () => {
    const out = limitRows(limits, rows);
    expect(out.map((r) => [r.turn, r.p50_ttfp_ms, r.ttfp_over_limit])).toEqual([
      [1, 100, 2.5],
      [2, 130, 2],
      [3, null, null], // the turn failed: no TTFP to compare
    ]);
    expect(worstTurn(out)).toEqual({ turn: 1, ttfp_over_limit: 2.5 });
    expect(worstTurn(out.slice(2))).toBeNull();
  });
});

describe('the report', () => {
  const run = (variant: string, concurrency: number, traces: RequestTrace[][]): TurnsRun => ({
    variant,
    async_chunk: true,
    scheduling: null,
    concurrency,
    conversations: traces.length,
    turns_per_conversation: traces[0].length,
    completed: traces.flat().filter((t) => t.ok).length,
    failed: 0,
    duration_s: 1,
    blocks: 1,
    computed_positions: null,
    system_computed_times: null,
    turns: turnRows(traces),
  });
  const cache = run('cache', 1, [[turn(100, 59, 0), turn(130, 140, 96)]]);
  const cacheC4 = run('cache', 4, [[turn(300, 59, 0), turn(330, 140, 96)]]);
  const rows = limitRows([limitOf(1, 59, 0, 0, 40), limitOf(2, 140, 96, 48, 100)], cache.turns);
  const limits: TurnLimits = {
    variant: 'cache',
    concurrency: 1,
    initial_chunk_frames: 2,
    thinker_decode_steps: 0,
    talker_decode_steps: 1,
    repeats: 5,
    warmup: 1,
    turns: rows,
    worst: worstTurn(rows),
    goal: 1.3,
    met: false,
  };
  const result = {
    command: 'test',
    started_at: '2026-11-27T00:00:00.000Z',
    git_sha: 'abc',
    machine: { node: 'v20', cpus: 2, cpu_model: 'cpu', load_avg_start: 0, load_avg_end: 0 },
    options: { protocol: 'realtime', turns: 2, input_len: 40, output_len: 10, warmup: 0, seed: 0 },
    runs: [cache, cacheC4],
    ratios: [],
    turn_limits: limits,
  } as unknown as TurnsResult;

  it('adds "Limit (ms)" and "TTFP / limit" to the c=1 run only, then the parts and the goal', () => {
    const text = formatTurns(result);
    const [c1, c4] = text.split('\n\n').filter((b) => b.startsWith('|'));
    expect(c1).toMatch(/\| Limit \(ms\) \| TTFP \/ limit \|\n/);
    expect(c1).toMatch(/^\| 1 \|.* 100 \|.* 40\.0 \| 2\.50 \|$/m); // TTFP 100 over a 40 ms limit
    expect(c1).toMatch(/^\| 2 \|.* 130 \|.* 100 \| 1\.30 \|$/m);
    expect(c4).not.toContain('Limit (ms)');
    expect(text).toContain('| 2 | 140 | 96 + 44 | 48 + 92 | 50.0 | 0.00 | 25.0 | 12.5 | 12.5 | 100 |');
    expect(text).toContain('worst 2.50x at turn 1, not met');
  });

  it('names the parts and the cached and new positions in the column headers', () => {
    const md = formatTurns(result);
    expect(md).toContain('| TTFP / turn 1 | Limit (ms) | TTFP / limit |');
    expect(md).toContain('| Turn | Input | Thinker cached + new | Talker cached + new |');
  });

  it('leaves them out without limits (--skip-limit, --url, or a result from before them)', () => {
    const without = { ...result, turn_limits: null } as TurnsResult;
    expect(formatTurns(without)).not.toContain('Limit');
    const { turn_limits: _dropped, ...older } = result;
    expect(formatTurns(older as TurnsResult)).not.toContain('Limit');
  });
});
