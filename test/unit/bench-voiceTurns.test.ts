/**
 * `chorus bench --voice --turns` without a server: the per-turn arithmetic on hand-made traces (every expected number
 * worked out by hand from the definitions), the goal, two servers' ratio, the report's shape, the seeded sentences,
 * and the flag checks that fail before anything starts.
 */
import { describe, expect, it } from 'vitest';
import { CONVERSATION_SENTENCES, spokenConversations } from '../../bench/voice/conversations/spokenConversations.ts';
import { formatVoiceTurnsText } from '../../bench/voice/conversations/formatVoiceTurns.ts';
import {
  summarizeVoiceTurnsRun,
  voiceTurnRows,
  voiceTurnsGoals,
  voiceTurnsRatios,
  type VoiceTurnsResult,
} from '../../bench/voice/conversations/voiceTurnsResult.ts';
import type { TurnTrace } from '../../bench/voice/protocol.ts';
import { isUsageError } from '../../src/common/cliArgs.ts';
import { run } from '../../src/cli/commands/bench.ts';

/**
 * A spoken turn whose speech ended at 1000 (client clock) and at 5000 ms of the session's audio: speech_stopped
 * `stopped` ms later, first audio `ttfp` ms later, the VAD's end of speech `lag` ms off the signal's.
 */
function turn(stopped: number, ttfp: number, input: number, cached: number, lag = -4): TurnTrace {
  return {
    kind: 'voice',
    startMs: 1000,
    events: [
      { type: 'text', atMs: 1000 + ttfp - 5 },
      { type: 'audio', atMs: 1000 + ttfp, samples: 2400, sampleRateHz: 24_000 },
      { type: 'done', atMs: 1000 + ttfp + 300 },
    ],
    ok: true,
    promptTokens: input,
    cachedTokens: cached,
    speechStoppedMs: 1000 + stopped,
    speechEndAudioMs: 5000,
    vadAudioEndMs: 5000 + lag,
    speechMs: 2000,
  };
}
const failed = (error: string): TurnTrace => ({ kind: 'voice', startMs: 0, events: [], ok: false, error });

describe('voiceTurnRows', () => {
  // Three conversations of three turns; conversation 2's turn 3 failed.
  const traces = [
    [turn(520, 600, 90, 48), turn(530, 650, 200, 160), turn(540, 800, 300, 272)],
    [turn(500, 620, 90, 48), turn(510, 700, 200, 176), turn(520, 900, 300, 288, -12)],
    [turn(510, 610, 90, 32), turn(500, 640, 200, 160), failed('the VAD ended the turn before the speech ended')],
  ];
  const rows = voiceTurnRows(traces);

  it('has one row per turn index, numbered from 1, with failures counted and named', () => {
    expect(rows.map((r) => [r.turn, r.conversations, r.completed, r.failed])).toEqual([
      [1, 3, 3, 0],
      [2, 3, 3, 0],
      [3, 3, 2, 1],
    ]);
    expect(rows[2].errors).toEqual(['the VAD ended the turn before the speech ended']);
  });

  it('takes p50s over the conversations: end of speech -> audio, -> speech_stopped, and the rest', () => {
    expect(rows.map((r) => r.voice_ttfp_ms.p50)).toEqual([610, 650, 850]); // turn 3: of 800 and 900
    expect(rows.map((r) => r.speech_stopped_ms.p50)).toEqual([510, 510, 530]);
    expect(rows.map((r) => r.stopped_to_audio_ms.p50)).toEqual([100, 140, 320]); // 260 and 380
    expect(rows[2].voice_ttfp_ms.p90).toBeCloseTo(890, 9);
    expect(rows.map((r) => r.vad_end_lag_ms.p50)).toEqual([-4, -4, -8]);
  });

  it('reports turn k over turn 1 of the p50s', () => {
    expect(rows[0].voice_ttfp_over_turn1).toBe(1);
    expect(rows[1].voice_ttfp_over_turn1).toBeCloseTo(650 / 610, 12);
    expect(rows[2].voice_ttfp_over_turn1).toBeCloseTo(850 / 610, 12);
    expect(rows[2].stopped_to_audio_over_turn1).toBeCloseTo(3.2, 12);
  });

  it('averages input and cached tokens over answered turns; the cached share is their sums', () => {
    expect(rows.map((r) => r.mean_input_tokens)).toEqual([90, 200, 300]);
    expect(rows.map((r) => r.mean_cached_tokens)).toEqual([128 / 3, 496 / 3, 280]);
    expect(rows[2].cached_share).toBeCloseTo(560 / 600, 12);
  });

  it('gives nulls, not NaN, at a turn index where every turn failed', () => {
    const [row] = voiceTurnRows([[failed('x')], [failed('y')]]);
    expect([row.completed, row.failed, row.voice_ttfp_ms.p50, row.mean_input_tokens, row.cached_share]).toEqual([
      0,
      2,
      null,
      null,
      null,
    ]);
    expect(row.voice_ttfp_over_turn1).toBeNull();
  });
});

describe('runs, ratios and the goal', () => {
  const runOf = (variant: string, concurrency: number, turn3Ttfp: number) =>
    summarizeVoiceTurnsRun({
      variant,
      concurrency,
      turnsPerConversation: 3,
      traces: [[turn(500, 600, 90, 48), turn(500, 640, 200, 160), turn(500, turn3Ttfp, 300, 272)]],
      durationMs: 12_000,
      blocks: 2,
    });
  const runs = [runOf('cache', 1, 780), runOf('no-cache', 1, 1200), runOf('cache', 4, 2000)];

  it('summarizes a run', () => {
    expect(runs[0]).toMatchObject({ conversations: 1, completed: 3, failed: 0, duration_s: 12, speech_ms: 2000 });
    expect(runs[0].turns).toHaveLength(3);
  });

  it('divides the first variant by the second per turn, at each concurrency both ran', () => {
    const ratios = voiceTurnsRatios(runs, 'cache', 'no-cache');
    expect(ratios.map((r) => r.concurrency)).toEqual([1]);
    expect(ratios[0].turns.map((t) => t.turn)).toEqual([1, 2, 3]);
    expect(ratios[0].turns[2].voice_ttfp).toBeCloseTo(780 / 1200, 12);
    expect(ratios[0].turns[2].stopped_to_audio).toBeCloseTo(280 / 700, 12);
  });

  it('sets the goal on the last turn over turn 1 at c=1, per server when there are two', () => {
    const goals = voiceTurnsGoals(runs);
    expect(goals.map((g) => [g.name, g.met])).toEqual([
      ['voice TTFP (end of speech -> first audio) at turn 3 / turn 1 at c=1 (p50), cache', true],
      ['voice TTFP (end of speech -> first audio) at turn 3 / turn 1 at c=1 (p50), no-cache', false],
    ]);
    expect(goals[0].value).toBeCloseTo(1.3, 12);
    expect(goals[0].target).toBe('<= 1.5');
    expect(voiceTurnsGoals([runs[0]])[0].name).not.toMatch(/, cache$/);
  });

  it('renders a table per run, the side by side, the goal and the failures', () => {
    const result: VoiceTurnsResult = {
      tool: 'chorus bench --voice --turns',
      started_at: '2026-11-27T00:00:00.000Z',
      finished_at: '2026-11-27T00:01:00.000Z',
      command: 'chorus bench --voice --turns 3',
      git_sha: 'abc',
      machine: {
        node: 'v20',
        platform: 'linux',
        cpu_model: 'cpu',
        cpus: 2,
        memory_gib: 24,
        load_avg_start: 1,
        load_avg_end: 1,
      },
      target: { kind: 'config', file: 'x.yaml' },
      config_sha256: {},
      remote_stages: {},
      options: {
        concurrency: [1],
        turns: 3,
        conversations: null,
        output_len: 8,
        silence_duration_ms: 500,
        warmup: 1,
        seed: 0,
        interleaved: true,
      },
      runs: runs.slice(0, 2),
      ratios: voiceTurnsRatios(runs.slice(0, 2), 'cache', 'no-cache'),
      goals: voiceTurnsGoals(runs.slice(0, 2)),
    };
    const text = formatVoiceTurnsText(result);
    expect(text).toContain('cache, voice, c=1: 1 conversations x 3 turns, 3 answered, 0 failed');
    expect(text).toContain('cache / no-cache by turn, c=1');
    expect(text).not.toContain('goal'); // the development goal only with --goals
    expect(formatVoiceTurnsText(result, { goals: true })).toMatch(
      /turn 3 \/ turn 1 at c=1 \(p50\), no-cache: 2\.00 \(goal <= 1\.5, not met\)/,
    );
    expect(text).toMatch(/^ +3 +1 +0 +300 +272 +91% +780 +1\.30 /m);
  });
});

describe('spokenConversations', () => {
  it('is seeded: the same seed gives the same sentences, conversation i whatever the count', () => {
    expect(spokenConversations(3, 5, 7)).toEqual(spokenConversations(3, 5, 7));
    expect(spokenConversations(3, 5, 7)[1]).toEqual(spokenConversations(2, 5, 7)[1]);
    expect(spokenConversations(1, 5, 7)[0]).not.toEqual(spokenConversations(1, 5, 8)[0]);
    expect(spokenConversations(2, 5, 7)[0]).not.toEqual(spokenConversations(2, 5, 7)[1]);
  });

  it('speaks a different sentence every turn while there are sentences left, and never one twice in a row', () => {
    const [twenty] = spokenConversations(1, 20, 0);
    expect(new Set(twenty).size).toBe(20);
    const [long] = spokenConversations(1, 3 * CONVERSATION_SENTENCES.length, 3);
    for (let i = 1; i < long.length; i++) expect(long[i]).not.toBe(long[i - 1]);
  });

  it('has no sentence with an inner pause (a comma, a dash) that could end a turn early', () => {
    expect(new Set(CONVERSATION_SENTENCES).size).toBe(CONVERSATION_SENTENCES.length);
    for (const s of CONVERSATION_SENTENCES) expect(s).toMatch(/^[A-Z][A-Za-z' ]+[?.]$/);
  });
});

describe('chorus bench --voice --turns arguments', () => {
  async function failure(argv: string[]): Promise<Error> {
    try {
      await run(argv);
    } catch (err) {
      return err as Error;
    }
    throw new Error(`chorus bench ${argv.join(' ')} did not fail`);
  }

  it.each([
    [['--turns', '0'], /--turns must be an integer >= 1, got "0"/],
    [['--turns', '2.5'], /--turns must be an integer >= 1, got "2.5"/],
    [['--turns', '3', '--concurrency', '1,0'], /--concurrency must be an integer >= 1, got "0"/],
    [['--turns', '3', '--silence-ms=-1'], /--silence-ms must be an integer >= 0/],
    [['--turns', '3', '--num-prompts', '0'], /--num-prompts must be an integer >= 1/],
    [['--turns', '3', '--output-len', '8', '--max-tokens', '9'], /--output-len 8 and --max-tokens 9 are the same/],
    [['--turns', '3', '--url', 'http://127.0.0.1:1', '--config', 'x.yaml'], /either --url .* or --config/],
    [['--turns', '3', '--compare-prefix-cache', '--compare-config', 'x.yaml'], /one of --compare-prefix-cache and/],
    [['--turns', '3', '--url', 'http://127.0.0.1:1', '--compare-prefix-cache'], /--compare-prefix-cache is for/],
    [['--turns', '3', '--input-len', '40'], /--input-len is not for --voice --turns: each user turn is a spoken/],
    [['--turns', '3', '--protocol', 'chat'], /--protocol is not for --voice --turns: spoken conversations are/],
    [['--turns', '3', '--compare-sync'], /--compare-sync is not for --voice --turns: compare with/],
    [['--turns', '3', '--skip-limit'], /--skip-limit is not for --voice --turns/],
    [['--turns', '3', '--no-such-flag'], /Unknown option '--no-such-flag'/],
  ])('--voice %j fails with a clear message', async (argv, message) => {
    const err = await failure(['--voice', ...argv]);
    expect(isUsageError(err)).toBe(true); // chorus exits 2 with the usage
    expect(err.message).toMatch(message);
  });

  it('--help lists --voice --turns', async () => {
    const { usage } = await import('../../src/cli/commands/bench.ts');
    expect(usage).toMatch(/chorus bench --voice --turns N /);
    expect(usage).toMatch(/^--voice --turns N: spoken conversations of N turns/m);
  });
});
