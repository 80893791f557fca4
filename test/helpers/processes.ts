/** Process checks for tests that start Chorus as a real command. */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

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
    .filter((line) => line.includes('stageMain.ts'))
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
