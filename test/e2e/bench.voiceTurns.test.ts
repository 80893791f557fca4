/**
 * `chorus bench --voice --turns` at tiny scale as a real command: one spoken conversation of 3 turns at c=1 on the
 * default pipeline it starts in its own process (server VAD answering each turn, each sentence spoken once the last
 * answer is done). Checks the report's shape and what must hold on any machine: a row per turn, every turn answered,
 * positive latencies, each turn's input holding the last one's, and no speech WAVs left behind; never speed.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { VoiceTurnDetail } from '../../bench/voice/conversations/voiceTurnDetails.ts';
import type { VoiceTurnsResult } from '../../bench/voice/conversations/voiceTurnsResult.ts';
import { CHORUS_BIN, killOnFinish } from '../helpers/processes.ts';
import { tempDir } from '../helpers/tempDir.ts';

const SILENCE_MS = 500;
const TURNS = 3;

describe('chorus bench --voice --turns', () => {
  it('speaks a conversation of 3 turns in one session and reports each turn', async () => {
    const out = join(tempDir('bench-voice-turns-out'), 'results');
    const tmp = tempDir('bench-voice-turns-tmp'); // the command's TMPDIR: its speech WAVs go here
    const child = spawn(
      process.execPath,
      [
        CHORUS_BIN,
        ...['bench', '--voice', '--turns', String(TURNS), '--concurrency', '1', '--num-prompts', '1'],
        ...['--output-len', '8', '--warmup', '1', '--silence-ms', String(SILENCE_MS), '--out', out],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: tmp, CHORUS_LOG_LEVEL: 'warn' } },
    );
    killOnFinish(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, stderr).toBe(0);
    expect(readdirSync(tmp).filter((name) => name.startsWith('chorus-'))).toEqual([]);

    const result = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as VoiceTurnsResult;
    expect(result.tool).toBe('chorus bench --voice --turns');
    expect(result.options).toMatchObject({ turns: TURNS, conversations: 1, output_len: 8, interleaved: false });
    expect(result.runs).toHaveLength(1);
    const [run] = result.runs;
    const errors = run.turns.flatMap((t) => t.errors);
    expect([run.conversations, run.completed, run.failed], errors.join('; ')).toEqual([1, TURNS, 0]);
    expect(run.turns.map((t) => [t.turn, t.completed, t.failed])).toEqual([
      [1, 1, 0],
      [2, 1, 0],
      [3, 1, 0],
    ]);
    for (const t of run.turns) {
      // The VAD waits out the silence before it ends the turn; the first audio comes after that.
      expect(t.speech_stopped_ms.p50!).toBeGreaterThanOrEqual(SILENCE_MS);
      expect(t.voice_ttfp_ms.p50!).toBeGreaterThan(t.speech_stopped_ms.p50!);
      expect(t.stopped_to_audio_ms.p50!).toBeGreaterThan(0);
      expect(t.voice_ttfp_over_turn1!).toBeGreaterThan(0);
      // The VAD's audio_end_ms is on the session's whole audio timeline: near where this turn's speech ends.
      expect(Math.abs(t.vad_end_lag_ms.p50!)).toBeLessThan(300);
      expect(t.mean_cached_tokens!).toBeGreaterThanOrEqual(0);
      expect(t.mean_cached_tokens!).toBeLessThanOrEqual(t.mean_input_tokens!);
    }
    expect(run.turns[0].voice_ttfp_over_turn1).toBe(1);
    // Each turn's prompt is the conversation so far: the last prompt, its answer and the new utterance's rows.
    const inputs = run.turns.map((t) => t.mean_input_tokens!);
    for (let i = 1; i < inputs.length; i++) expect(inputs[i]).toBeGreaterThan(inputs[i - 1] + 8);
    expect(result.goals.map((g) => g.name)).toEqual([
      'voice TTFP (end of speech -> first audio) at turn 3 / turn 1 at c=1 (p50)',
    ]);

    const turns = JSON.parse(readFileSync(join(out, 'turns.json'), 'utf8')) as VoiceTurnDetail[];
    expect(turns.map((t) => [t.conversation, t.turn, t.ok])).toEqual([
      [0, 1, true],
      [0, 2, true],
      [0, 3, true],
    ]);
    expect(new Set(turns.map((t) => t.sentence)).size).toBe(TURNS); // a different sentence every turn
    expect(new Set(turns.map((t) => t.request_id)).size).toBe(TURNS);
    const md = readFileSync(join(out, 'results.md'), 'utf8');
    expect(md).toMatch(/^# chorus bench --voice --turns results/);
    expect(md.match(/^\| [123] \| 1 \| 0 \|/gm)).toHaveLength(TURNS);
    expect(stdout).toContain('Voice TTFP p50 (ms)');
  }, 240_000);
});
