/**
 * `chorus bench --voice` at tiny scale as a real command (c=1, 2 spoken and 2 typed turns on the default pipeline it
 * starts in its own process): the results have finite figures, the report renders, and nothing is left behind (stage
 * processes, the client process, /dev/shm segments, the speech WAVs in the temp folder).
 */
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { VoiceBenchResult } from '../../bench/voice/voiceResults.ts';
import { CHORUS_BIN, isAlive, killOnFinish, segmentsOf } from '../helpers/processes.ts';
import { tempDir } from '../helpers/tempDir.ts';

const SILENCE_MS = 500;

/** Every process below `pid` (stage processes, the voice client process and theirs). */
function descendantsOf(pid: number): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when there are none
  }
  const children = out.split('\n').filter(Boolean).map(Number);
  return children.flatMap((c) => [c, ...descendantsOf(c)]);
}

/**
 * Alive and not a zombie: tsx's esbuild helpers exit with their node process, and in a container whose init does
 * not reap them they stay as zombies (dead, but visible to kill(pid, 0)).
 */
function running(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '')[0] !== 'Z';
  } catch {
    return false; // gone since
  }
}

describe('chorus bench --voice', () => {
  it('measures spoken and typed turns, writes results and a report, and leaves nothing behind', async () => {
    const out = join(tempDir('bench-voice-out'), 'results');
    const tmp = tempDir('bench-voice-tmp'); // the command's TMPDIR: its speech WAVs go here
    const child = spawn(
      process.execPath,
      [
        CHORUS_BIN,
        ...['bench', '--voice', '--concurrency', '1', '--num-prompts', '2', '--output-len', '8', '--goals'],
        ...['--warmup', '1', '--limit-repeats', '3', '--silence-ms', String(SILENCE_MS), '--out', out],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TMPDIR: tmp, CHORUS_LOG_LEVEL: 'warn' } },
    );
    killOnFinish(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const seen = new Set<number>();
    const poll = setInterval(() => descendantsOf(child.pid!).forEach((p) => seen.add(p)), 250);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearInterval(poll);
    expect(code, stderr).toBe(0);

    // Nothing left: every process the command started, its shared memory, its temp files.
    expect(seen.size).toBeGreaterThanOrEqual(6); // five stage processes and the client process
    expect([...seen].filter(running)).toEqual([]);
    expect(segmentsOf(child.pid!)).toEqual([]);
    expect(readdirSync(tmp).filter((name) => name.startsWith('chorus-'))).toEqual([]);

    const result = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as VoiceBenchResult;
    expect(result.runs).toHaveLength(1);
    const run = result.runs[0];
    expect(run.errors).toEqual([]);
    expect([run.concurrency, run.voice_completed, run.text_completed]).toEqual([1, 2, 2]);
    const spreads = [
      run.voice_ttfp_ms,
      run.voice_ttfp_minus_silence_ms,
      run.speech_stopped_ms,
      run.stopped_to_audio_ms,
      run.text_ttfp_ms,
      run.engine_ttfp_ms.voice,
      run.engine_ttfp_ms.text,
    ];
    for (const s of spreads) {
      expect(Number.isFinite(s.p50) && Number.isFinite(s.p90), JSON.stringify(s)).toBe(true);
      expect(s.p90!).toBeGreaterThanOrEqual(s.p50!);
    }
    // A ratio of percentiles, not a distribution: its p90 may be below its p50.
    expect(run.voice_over_text.p50!).toBeGreaterThan(0);
    expect(run.voice_over_text.p90!).toBeGreaterThan(0);
    // The VAD waits out the silence before it ends the turn; the answer comes after that.
    expect(run.speech_stopped_ms.p50!).toBeGreaterThanOrEqual(SILENCE_MS);
    expect(run.voice_ttfp_ms.p50!).toBeGreaterThan(run.speech_stopped_ms.p50!);
    expect(run.voice_ttfp_minus_silence_ms.p50).toBeCloseTo(run.voice_ttfp_ms.p50! - SILENCE_MS, 6);
    expect(run.text_ttfp_ms.p50!).toBeGreaterThan(0);
    expect(run.voice_over_text.p50).toBeCloseTo(run.voice_ttfp_minus_silence_ms.p50! / run.text_ttfp_ms.p50!, 6);
    // A voice turn's prompt holds the audio's rows (25 a second): more than the typed sentence's tokens.
    expect(run.prompt_tokens.voice!).toBeGreaterThan(run.prompt_tokens.text!);

    const b = result.breakdown!;
    expect(b.encode!.rows).toBeGreaterThan(0);
    expect(b.encode!.encoder_ms).toBeGreaterThan(0);
    expect(b.limit_voice!.prompt_tokens).toBe(Math.round(run.prompt_tokens.voice!));
    expect(b.limit_text!.prompt_tokens).toBe(Math.round(run.prompt_tokens.text!));

    expect(result.goals.map((g) => g.name)).toEqual(['voice TTFP minus silence_duration_ms / text TTFP at c=1 (p50)']);
    const goal = result.goals[0];
    expect(goal.value).toBe(run.voice_over_text.p50);
    if (goal.met) expect(result.goal_note).toBeNull();
    else expect(result.goal_note).toMatch(/Thinker prefills the turn while the user speaks.*held.*at speech_stopped/);

    const md = readFileSync(join(out, 'results.md'), 'utf8');
    expect(md).toMatch(/^# chorus bench --voice results/);
    expect(md).toContain('| Max concurrency | Turns voice / text | Voice TTFP p50 / p90 |');
    expect(md).toContain('**Where the time goes');
    expect(md).toContain('**Goal**');
    expect(stdout).toContain('Voice TTFP p50 / p90');
    // --goals: the development goal, met or not, in words.
    expect(stdout).toMatch(
      /voice TTFP minus silence_duration_ms \/ text TTFP at c=1 \(p50\): [0-9.]+ \(goal <= 1.2, (met|not met)\)/,
    );
    const requests = JSON.parse(readFileSync(join(out, 'requests.json'), 'utf8')) as { traces: unknown[] }[];
    expect(requests[0].traces).toHaveLength(4);
  }, 180_000);
});
