/**
 * A diagnostic record of every step a stage process runs, for explaining where a request's time went (which
 * steps it waited behind, in which stage, and how long each took under the load of the moment). Off unless
 * CHORUS_STEP_TRACE_DIR names a folder: then each stage process appends one JSON line per step to
 * `<dir>/<instance>-<pid>.jsonl`: `{ t: ms at the step's start, d: ms, items: [[requestId, positions], ...] }`.
 * `t` is on the machine's monotonic clock (CLOCK_MONOTONIC, as process.hrtime), which every process shares: wall
 * clock times derived per process (performance.timeOrigin + now) disagree between processes by up to a
 * millisecond, as much as the hops between stages take.
 * `chorus bench --trace-steps` sets it; bench/ttfp/stepTimeline.ts reads the files.
 *
 * One synchronous write per step (a few microseconds against steps of milliseconds), so a crash loses nothing.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';

export const STEP_TRACE_ENV = 'CHORUS_STEP_TRACE_DIR';

/** A step's work: request id and the positions (tokens, frames, items) it took in the step. */
export type StepItem = readonly [requestId: string, positions: number];

/** Milliseconds on the monotonic clock every process of the machine shares. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

export interface StepRecord {
  readonly t: number;
  readonly d: number;
  readonly items: readonly StepItem[];
}

export class StepTrace {
  /** monotonicMs() - performance.now(): both run on the monotonic clock, so the offset is constant. */
  private readonly offsetMs = monotonicMs() - performance.now();

  private constructor(private fd: number | null) {}

  /** The trace of this process when the environment asks for one, else null. */
  static fromEnv(instance: string, env: NodeJS.ProcessEnv = process.env): StepTrace | null {
    const dir = env[STEP_TRACE_ENV];
    if (!dir) return null;
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${instance.replace(/[^\w.-]/g, '_')}-${process.pid}.jsonl`);
    return new StepTrace(openSync(file, 'a'));
  }

  /** startedAtMs is performance.now() at the step's start. */
  record(startedAtMs: number, items: readonly StepItem[]): void {
    if (this.fd === null) return;
    const rec: StepRecord = { t: this.offsetMs + startedAtMs, d: performance.now() - startedAtMs, items };
    writeSync(this.fd, JSON.stringify(rec) + '\n');
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
