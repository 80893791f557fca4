/** Small pieces every benchmark shares: timing, and the git revision and machine a result was measured on. */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** Milliseconds one synchronous call takes. */
export function timed(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

/** HEAD's SHA, with `-dirty` when tracked files differ from it; 'unknown' outside a checkout. */
export function gitSha(): string {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const sha = git('rev-parse', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no').length > 0 ? `${sha}-dirty` : sha;
  } catch {
    return 'unknown';
  }
}

/** The machine a result was measured on, in every report. */
export interface Machine {
  readonly node: string;
  readonly platform: string;
  readonly cpu_model: string;
  readonly cpus: number;
  readonly memory_gib: number;
  /** 1-minute load average when the bench started and ended (the machine may be shared). */
  readonly load_avg_start: number;
  load_avg_end: number;
}

/** The machine now; load_avg_end is the start's until the run stamps its end. */
export function machineInfo(): Machine {
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpu_model: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.availableParallelism(),
    memory_gib: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    load_avg_start: os.loadavg()[0],
    load_avg_end: os.loadavg()[0],
  };
}

/** The upper median (the middle value; of an even count, the higher of the two): what the scripts' rounds report. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/** The nearest-rank percentile (`p` in 0-100) of a sorted array: the smallest value with p% at or below it. */
export function nearestRank(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

/**
 * A closed loop: work(i) for every i below `count` on min(concurrency, count) slots (at least one), each slot taking
 * the next index as soon as its previous work has ended; `slot` says which slot runs it.
 */
export async function closedLoop(
  count: number,
  concurrency: number,
  work: (i: number, slot: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(concurrency, count)) }, async (_, slot) => {
      // `next++` is safe: the slots interleave only at awaits, never inside this statement.
      for (let i = next++; i < count; i = next++) await work(i, slot);
    }),
  );
}
