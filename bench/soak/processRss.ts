/**
 * Resident memory of other processes, read from /proc/<pid>/status (VmRSS; VmHWM, the peak), and its series over the
 * turns of a soak: one line per process name (main, thinker#0, ...), each sample naming the pid it was read from, so a
 * stage that restarted shows up as a new pid on the same line rather than as a leak or a drop.
 */
import { readFileSync } from 'node:fs';

/** A process's resident memory (VmRSS) and its peak (VmHWM) in KiB; null when it is gone (or /proc is not there). */
export function memoryKiB(pid: number): { readonly rss: number; readonly peak: number } | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const [rss, peak] = ['VmRSS', 'VmHWM'].map((field) => new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status));
  return rss && peak ? { rss: Number(rss[1]), peak: Number(peak[1]) } : null;
}

export interface RssSample {
  /** Turns every session had finished when this was read (0: before the first); the timed soak: the sample's index. */
  readonly turn: number;
  readonly pid: number;
  readonly mib: number;
  /** What its prefix cache held then (GET /metrics), for a stage that has one. */
  readonly prefixCacheMiB?: number;
}

export interface NamedPid {
  readonly name: string;
  readonly pid: number;
}

/** RSS samples per process name, in turn order. */
export class RssByTurn {
  readonly #series = new Map<string, RssSample[]>();

  /** Reads every process now; one that has exited (a stage between restarts) is skipped for this turn. */
  sample(turn: number, processes: readonly NamedPid[], prefixCacheMiB: Readonly<Record<string, number>> = {}): void {
    for (const { name, pid } of processes) {
      const kib = memoryKiB(pid)?.rss;
      if (kib === undefined) continue;
      const series = this.#series.get(name) ?? [];
      const cache = prefixCacheMiB[name];
      series.push({
        turn,
        pid,
        mib: Math.round((kib / 1024) * 10) / 10,
        ...(cache !== undefined ? { prefixCacheMiB: cache } : {}),
      });
      this.#series.set(name, series);
    }
  }

  series(): Record<string, readonly RssSample[]> {
    return Object.fromEntries(this.#series);
  }
}

/** Per process: its RSS (MiB) at the first sample, the last, and the highest. */
export function rssSpan(
  series: Readonly<Record<string, readonly RssSample[]>>,
): Record<string, { start: number; end: number; max: number }> {
  const span = (s: readonly RssSample[]) => ({
    start: s[0].mib,
    end: s.at(-1)!.mib,
    max: Math.max(...s.map((x) => x.mib)),
  });
  return Object.fromEntries(Object.entries(series).map(([name, s]) => [name, span(s)]));
}
