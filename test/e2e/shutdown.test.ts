/**
 * SIGTERM / SIGINT mid-answer: the CLI drains, stops every stage process and unlinks every shared-memory segment.
 */
import { spawn, execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'chorus.js');

/** Stage processes forked by `pid` (tsx may run helper processes of its own: those are not stages). */
function stageProcessesOf(pid: number): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when there are none
  }
  return out
    .split('\n')
    .filter((line) => line.includes('stageMain.ts'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.each(['SIGTERM', 'SIGINT'] as const)('chorus generate on %s', (signal) => {
  it('leaves no stage process and no /dev/shm segment behind', async () => {
    const child = spawn(process.execPath, [BIN, 'generate', '--prompt', 'Tell me a very long story.', '--max-tokens', '3000', '--ignore-eos'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CHORUS_LOG_LEVEL: 'warn' },
    });
    // The first streamed text means every stage is up and a request is in flight.
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`generate exited early with ${code}`)));
    });
    const stages = stageProcessesOf(child.pid!);
    expect(stages.length).toBe(3);
    const segmentsBefore = readdirSync('/dev/shm').filter((n) => n.startsWith(`chorus-${child.pid}-`));
    expect(segmentsBefore.length).toBeGreaterThan(0);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill(signal);
    expect(await exited).toBe(0);
    expect(stages.filter(alive)).toEqual([]);
    expect(readdirSync('/dev/shm').filter((n) => n.startsWith(`chorus-${child.pid}-`))).toEqual([]);
  }, 60_000);
});
