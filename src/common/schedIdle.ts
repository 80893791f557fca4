/**
 * Linux's idle scheduling class (SCHED_IDLE) for a stage process (`engine.sched: idle`). A task in it runs only on
 * a core no other task wants: below every nice level (its weight is a fifth of nice 19's), so an encoder there takes
 * none of the Thinker's or the server's time while they have work. Node has no call for it; util-linux's `chrt`
 * sets it (started with execFileSync: no shell). `--all-tasks` covers every thread that exists now; threads and
 * children made later inherit it, so the stage sets it before its model loads.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The values `engine.sched` takes. */
export const SCHED_POLICIES = ['idle'] as const;
export type SchedPolicy = (typeof SCHED_POLICIES)[number];

/** Linux's number for SCHED_IDLE (the `policy` line of /proc/<pid>/sched). */
export const SCHED_IDLE = 5;

/** Why `engine.sched: idle` cannot work on this host, or null when it can (Linux with util-linux's chrt). */
export function schedIdleUnavailable(): string | null {
  if (process.platform !== 'linux') return `the idle scheduling class is Linux's; this host is ${process.platform}`;
  const probe = spawnSync('chrt', ['--max'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0)
    return `it needs util-linux's chrt on PATH (${probe.error?.message ?? `chrt exited ${String(probe.status)}`})`;
  return null;
}

/** Puts every thread of process `pid` in SCHED_IDLE; throws (chrt's message) when it cannot. */
export function enterSchedIdle(pid: number): void {
  execFileSync('chrt', ['--idle', '--all-tasks', '--pid', '0', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The scheduling policy of a thread (`policy` of /proc/<pid>/task/<tid>/sched), or null when it cannot be read. */
export function schedPolicyOf(pid: number, tid = pid): number | null {
  try {
    const line = /^policy\s*:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/task/${tid}/sched`, 'utf8'));
    return line ? Number(line[1]) : null;
  } catch {
    return null;
  }
}
