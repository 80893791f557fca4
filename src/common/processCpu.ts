/**
 * CPU time a process has used, from /proc/<pid>/stat (user + system, in clock ticks). The hang watch uses it to
 * tell a stage that is busy in one long step (its CPU time grows) from one that is stopped or stuck waiting (it
 * does not): both are silent, only one is hung.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The process's /proc/<pid>/<name>, or null when it cannot be read (the process is gone, or this is not Linux). */
function procFile(pid: number, name: 'stat' | 'schedstat'): string | null {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch {
    return null;
  }
}

/** utime + stime of the process in clock ticks, or null when it cannot be read (gone, or not Linux). */
export function cpuTicksOf(pid: number): number | null {
  const stat = procFile(pid, 'stat');
  if (stat === null) return null;
  // The command name (field 2) may hold spaces and parentheses: count fields after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]); // field 14 of the whole line
  const stime = Number(fields[12]); // field 15
  return Number.isFinite(utime) && Number.isFinite(stime) ? utime + stime : null;
}

/**
 * The state of the process's main thread (field 3 of /proc/<pid>/stat: R runnable, S sleeping, D in uninterruptible
 * wait, T stopped, ...), or null when it cannot be read.
 */
export function processStateOf(pid: number): string | null {
  const stat = procFile(pid, 'stat');
  if (stat === null) return null;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] || null;
}

/**
 * Whether the process exists and is not stopped (T, t: SIGSTOP, a debugger) or dead (Z, X): running, runnable, or
 * waiting for something that will wake it. A chunk wait renews its deadline while its producer's process runs.
 */
export function processRuns(pid: number): boolean {
  const state = processStateOf(pid);
  return state !== null && !'TtZXx'.includes(state);
}

/**
 * Time the process's main thread has spent runnable but waiting for a CPU (ms; the run queue's delay, field 2 of
 * /proc/<pid>/schedstat), or null when it cannot be read. It grows only while the thread wants to run: a stage
 * starved by a busy machine (or by its nice level) shows it, a stopped or blocked one does not. The kernel adds a
 * wait when it ends (the thread gets a CPU): a thread that has waited all along without getting one shows none yet.
 */
export function runQueueWaitMsOf(pid: number): number | null {
  const stat = procFile(pid, 'schedstat');
  if (stat === null) return null;
  const waitNs = Number(stat.split(' ')[1]);
  return Number.isFinite(waitNs) ? waitNs / 1e6 : null;
}

/** /proc's clock ticks per second: USER_HZ, fixed at 100 by Linux's user ABI (what `getconf CLK_TCK` prints). */
export const CLOCK_TICKS_PER_SECOND = 100;

/** The same CPU time in ms, or null. */
export function cpuMsOf(pid: number): number | null {
  const ticks = cpuTicksOf(pid);
  return ticks === null ? null : (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/**
 * CPU time of every live thread of the process (ms, to the nanosecond: the first field of each
 * /proc/<pid>/task/<tid>/schedstat, the time the thread ran), or null when it cannot be read. /proc/<pid>/stat counts
 * in 10 ms ticks: over a short run a stage's few ms read as 0 or 10 (the bench's CPU a request said 0 for a Thinker
 * that had computed every answer). Threads that have ended are not counted (stat keeps theirs): for the processes the
 * bench reads, whose threads (the model's, V8's, libuv's) live as long as they do.
 */
export function threadsCpuMsOf(pid: number): number | null {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  let ns = 0;
  for (const tid of tids) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]) || 0;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e6;
}
