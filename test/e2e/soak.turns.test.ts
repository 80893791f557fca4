/**
 * `chorus soak --turns` as a user runs it, bounded: one Realtime conversation of 30 turns against `chorus serve`
 * (a child process) whose Thinker has 512 positions, so "auto" truncation starts within a dozen turns. No turn
 * fails, truncations are seen, the server's RSS is sampled after every turn for main (the server's own pid, not
 * the soak's) and for each stage process, and nothing outlives the server.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { TurnsSoakReport } from '../../bench/soak/runTurnsSoak.ts';
import { CHORUS_BIN, killOnFinish } from '../helpers/processes.ts';

const TURNS = 30;
const CONFIG = join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni-text-in.yaml');

describe('chorus soak --turns', () => {
  it(`--turns ${TURNS} --thinker-positions 512: 0 failed, truncations seen, RSS per process per turn`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-soak-turns-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const out = join(dir, 'report.json');
    const args = ['soak', '--turns', String(TURNS), '--config', CONFIG];
    const child = spawn(process.execPath, [CHORUS_BIN, ...args, '--thinker-positions', '512', '--out', out], {
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
    if (code !== 0) throw new Error(`chorus soak exited ${code}:\n${stdout}\n${stderr.slice(-4000)}`);
    expect(stdout).toMatch(/failed 0 +\[goal 0: met\]/);
    expect(stdout).toMatch(/^RSS \(MiB\)/m);

    const report = JSON.parse(readFileSync(out, 'utf8')) as TurnsSoakReport;
    expect(report.turns).toBe(TURNS);
    expect(report.failed).toEqual([]);
    expect(report.truncation.truncatingTurns).toBeGreaterThan(0);
    expect(report.truncation.ratio).not.toBeNull();
    // Every stage of the config and main, sampled before the first turn and after each; main is the server.
    const series = report.rssSeries;
    expect(Object.keys(series).sort()).toEqual(['code2wav#0', 'main', 'talker#0', 'thinker#0']);
    for (const [name, samples] of Object.entries(series)) {
      expect(
        samples.map((s) => s.turn),
        name,
      ).toEqual(Array.from({ length: TURNS + 1 }, (_, i) => i));
      for (const s of samples) expect(s.mib, name).toBeGreaterThan(10);
    }
    expect(new Set(series.main.map((s) => s.pid))).not.toContain(child.pid);
    expect(report.rss['thinker#0'].prefixCacheMiB).not.toBeNull();
    expect(report.leftover).toEqual({ processes: [], segments: [] });
    expect(report.serverExitCode).toBe(0);
  }, 400_000);
});
