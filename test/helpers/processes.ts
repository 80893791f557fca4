/** Process checks for tests that start Chorus as a real command. */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, onTestFinished } from 'vitest';
import { spawnedChannel, type SpawnedProcess } from '../../bench/ttfp/RemoteStageHost.ts';

export const CHORUS_BIN = join(import.meta.dirname, '..', '..', 'bin', 'chorus.js');

/** Stage processes forked by `pid` (tsx may run helper processes of its own: those are not stages). */
export function stageProcessesOf(pid: number): number[] {
  return childRows(pid, 'pid=,args=')
    .filter((line) => /stageEntry\.(ts|js)\b/.test(line))
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

/** `ps` rows in `format` of the live children of `pid` (none when it has none: ps then exits 1). */
function childRows(pid: number, format: string): string[] {
  try {
    const out = execFileSync('ps', ['-o', format, '--ppid', String(pid)], { encoding: 'utf8' });
    return out.split('\n').filter((line) => line.trim() !== '');
  } catch {
    return [];
  }
}

/** The command line of a live process (arguments joined by spaces), '' once it is gone. */
export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
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
 * assertion before the test's own shutdown must not leave a server running for the rest of the suite. `shared`: the
 * process outlives the test, for the describe block's later tests; it is killed after the block instead.
 */
export function killOnFinish(child: ChildProcess, shared?: SharedProcesses): void {
  if (shared) shared.adopt(child);
  else onTestFinished(() => killTree(child));
}

/** Processes a describe block's tests share: started in its beforeAll (or a test), killed after its last test. */
export interface SharedProcesses {
  adopt(child: ChildProcess): void;
}

/**
 * Call in a describe block: whatever its tests leave alive of the processes given to it (a deployment they share,
 * started in beforeAll, where no test runs to end them) is killed after the block, whatever happened.
 */
export function sharedProcesses(): SharedProcesses {
  const children: ChildProcess[] = [];
  afterAll(() => children.forEach(killTree));
  return { adopt: (child) => void children.push(child) };
}

/**
 * The child and every process under it, deepest first: not only its stage processes (`chorus soak` runs its server as a
 * child, whose stages are its grandchildren: a soak that timed out left that server and its five stages running).
 */
function killTree(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  for (const pid of descendantsOf(child.pid)) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  child.kill('SIGKILL');
}

/** Every live process under `pid`, each after its own descendants. */
function descendantsOf(pid: number): number[] {
  return childRows(pid, 'pid=').flatMap((line) => {
    const child = Number(line.trim());
    return [...descendantsOf(child), child];
  });
}

/**
 * The processes a bench run starts (a redis-server, `chorus stage` instances), as it announces them on
 * chorus:bench:spawned. run() runs the bench without CHORUS_REDIS_URL (it must start its own Redis, even where CI
 * exports one); killLeft() is for afterAll: whatever a failed assertion left, nothing outlives the file.
 */
export function benchProcesses() {
  const spawned: SpawnedProcess[] = [];
  const onSpawned = (message: unknown) => spawned.push(message as SpawnedProcess);
  return {
    spawned,
    async run<T>(bench: () => Promise<T>): Promise<T> {
      const envUrl = process.env.CHORUS_REDIS_URL;
      delete process.env.CHORUS_REDIS_URL;
      subscribe(spawnedChannel.name, onSpawned);
      try {
        return await bench();
      } finally {
        if (envUrl !== undefined) process.env.CHORUS_REDIS_URL = envUrl;
      }
    },
    killLeft(): void {
      unsubscribe(spawnedChannel.name, onSpawned);
      for (const p of spawned) if (isAlive(p.pid)) process.kill(p.pid, 'SIGKILL');
    },
  };
}
