/**
 * The soak in CI's short mode, as a user runs it: `chorus soak` with 32 sessions for 20 s, an abort storm, the
 * Talker killed 7 s in and malformed frames and bodies all along (13 s after the kill for its restart, the migrated
 * answers and fresh ones on the new process; the file runs alone, so each of its seconds is the suite's). Every
 * completed answer equals its reference, every other ending is accounted for by a code the chaos explains, the
 * answers on the killed Talker are migrated (engine.migration, on by default: none of them fails), fuzz gets only
 * client errors, and no process or shared memory outlives the run.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CHORUS_BIN, killOnFinish } from '../helpers/processes.ts';

describe('chorus soak (CI short mode)', () => {
  it('--seconds 20 --sessions 32 --abort-storm --kill-stage talker@7 --fuzz: no mismatch, all accounted', async () => {
    const args = ['soak', '--seconds', '20', '--sessions', '32', '--abort-storm', '--kill-stage', 'talker@7'];
    const child = spawn(process.execPath, [CHORUS_BIN, ...args, '--fuzz', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
    killOnFinish(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // 'close' (its pipes read to their end), not 'exit', which may come first (test/e2e/cli.test.ts).
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    // A soak that ended without its report says why on stderr: show it rather than a JSON parse error.
    if (!stdout.trim().startsWith('{'))
      throw new Error(`chorus soak exited ${code} without a report:\n${stderr.slice(-4000)}`);
    const report = JSON.parse(stdout) as {
      answers: number;
      mismatches: unknown[];
      endings: Record<string, number>;
      fuzz: Record<string, number>;
      leftover: { processes: number[]; segments: string[] };
      migrations: { migrated: number; refused: number; failed: number; pauseMsMean: number | null };
    };
    expect(report.mismatches).toEqual([]);
    expect(report.answers).toBeGreaterThan(100);
    // The abort storm cancels, the Talker's restart refuses a moment: nothing else. What ran on the Talker when it
    // was killed is replayed on its restarted process (the answers compared above), none fails with STAGE_DIED.
    const explained = ['cancelled', 'CHORUS_ERR_OVERLOADED', 'CHORUS_ERR_RATE_LIMITED'];
    for (const ending of Object.keys(report.endings)) expect(explained).toContain(ending);
    expect(report.endings.cancelled).toBeGreaterThan(0);
    expect(report.migrations).toMatchObject({ refused: 0, failed: 0 });
    expect(report.migrations.migrated).toBeGreaterThan(0);
    expect(report.migrations.pauseMsMean).toBeGreaterThan(0);
    for (const outcome of Object.keys(report.fuzz)) expect(outcome).toMatch(/^(ws error|http 4\d\d)$/);
    expect(report.leftover).toEqual({ processes: [], segments: [] });
    expect(code).toBe(0);
  }, 150_000);
});
