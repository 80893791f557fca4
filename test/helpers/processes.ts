/** Process checks for tests that start Chorus as a real command. */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

export const CHORUS_BIN = join(import.meta.dirname, '..', '..', 'bin', 'chorus.js');

/** Stage processes forked by `pid` (tsx may run helper processes of its own: those are not stages). */
export function stageProcessesOf(pid: number): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' });
  } catch {
    return []; // ps exits 1 when there are none
  }
  return out
    .split('\n')
    .filter((line) => line.includes('stageEntry.ts'))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Chorus segments in /dev/shm owned by `pid` (names are chorus-<ownerPid>-<random>). */
export function segmentsOf(pid: number): string[] {
  return readdirSync('/dev/shm').filter((n) => n.startsWith(`chorus-${pid}-`));
}

/**
 * Kills a spawned chorus command and its stage processes when the test ends, if they are still alive: a failed
 * assertion before the test's own shutdown must not leave a server running for the rest of the suite.
 */
export function killOnFinish(child: ChildProcess): void {
  onTestFinished(() => {
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    for (const pid of stageProcessesOf(child.pid)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    child.kill('SIGKILL');
  });
}
