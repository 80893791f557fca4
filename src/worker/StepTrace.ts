/**
 * A diagnostic record of every step a stage process runs, for explaining where a request's time went (which
 * steps it waited behind, in which stage, and how long each took under the load of the moment). Off unless
 * CHORUS_STEP_TRACE_DIR names a folder: then each stage process appends one JSON line per step to
 * `<dir>/<instance>-<pid>.jsonl`: `{ t: ms at the step's start, d: ms, items: [[requestId, positions], ...] }`, with
 * `x0` and `x` (ms from `t` to the model's run, and its length) when the step ran a model; and one line per mark on a
 * request's path (`{ m: name, r: requestId, t, ... }`: add, in, out, put; src/common/packetMarks.ts, the bench's
 * first-packet account).
 * `t` is on the machine's monotonic clock (CLOCK_MONOTONIC, as process.hrtime), which every process shares: wall
 * clock times derived per process (performance.timeOrigin + now) disagree between processes by up to a
 * millisecond, as much as the hops between stages take.
 * `chorus bench --trace-steps` sets it; bench/ttfp/stepTimeline.ts reads the files.
 *
 * Lines are kept in memory and written in one synchronous write when the stage ends a request (flush(), before it
 * tells main: whoever reads the file after an answer's end finds its lines), when FLUSH_BYTES have gathered, and when
 * the trace closes or the process exits. A write per line had put 15-20 writes on a c=1 first packet's path across
 * the stages, each on a path run once a request (cold): TTFP p50 23.2 ms without the bench's account against 24.1 with
 * it, three runs each (bench/NOTES.md, "Traces written at a request's end"). A process killed outright loses the
 * lines of the requests it had not ended.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import { monotonicMs, PERF_TO_MONOTONIC_MS } from '../common/packetMarks.ts';

export { monotonicMs };

export const STEP_TRACE_ENV = 'CHORUS_STEP_TRACE_DIR';

/** Lines gathered past this many bytes are written at once, requests ended or not (a busy stage's steady state). */
export const FLUSH_BYTES = 64 << 10;

/** A step's work: request id and the positions (tokens, frames, items) it took in the step. */
export type StepItem = readonly [requestId: string, positions: number];

export interface StepRecord {
  readonly t: number;
  readonly d: number;
  readonly items: readonly StepItem[];
  /** The model's run within the step: from t + x0, x ms long (absent when the step ran no model). */
  readonly x0?: number;
  readonly x?: number;
  /** The process's CPU time during the model's run (ms): below `x` when the run waited for a core. */
  readonly xc?: number;
}

/** The window of a step's model run, as performance.now() readings. */
export interface ModelWindow {
  readonly startedAtMs: number;
  readonly endedAtMs: number;
  /** The process's CPU time (every thread) during the run, when measured. */
  readonly cpuMs?: number;
}

/**
 * A mark on a request's path in a stage: `add` (its add handled), `in` (an input chunk handed to the core; `from` its
 * stage, `g` when the connector gave it), `out` (a chunk handed to the adapter; `to`), `put` (that chunk's frame going
 * into its edge).
 */
export interface MarkRecord {
  readonly m: 'add' | 'in' | 'out' | 'put';
  readonly r: string;
  readonly t: number;
  readonly from?: string;
  readonly to?: string;
  readonly g?: number;
}

export class StepTrace {
  private readonly offsetMs = PERF_TO_MONOTONIC_MS;
  private lines: string[] = [];
  private bytes = 0;
  /** Writes what is gathered when the process exits without close() (a throw, process.exit). */
  private readonly onExit = () => this.close();

  private constructor(private fd: number | null) {
    process.on('exit', this.onExit);
  }

  /** The trace of this process when the environment asks for one, else null. */
  static fromEnv(instance: string, env: NodeJS.ProcessEnv = process.env): StepTrace | null {
    const dir = env[STEP_TRACE_ENV];
    if (!dir) return null;
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${instance.replace(/[^\w.-]/g, '_')}-${process.pid}.jsonl`);
    return new StepTrace(openSync(file, 'a'));
  }

  /** startedAtMs is performance.now() at the step's start; model, its model run's window. */
  record(startedAtMs: number, items: readonly StepItem[], model?: ModelWindow | null): void {
    if (this.fd === null) return;
    const rec: StepRecord = {
      t: this.offsetMs + startedAtMs,
      d: performance.now() - startedAtMs,
      items,
      ...(model ? { x0: model.startedAtMs - startedAtMs, x: model.endedAtMs - model.startedAtMs } : {}),
      ...(model?.cpuMs !== undefined ? { xc: model.cpuMs } : {}),
    };
    this.add(JSON.stringify(rec));
  }

  /** A mark on a request's path, now (monotonic) unless `t` says when. */
  mark(m: MarkRecord['m'], r: string, extra: Omit<MarkRecord, 'm' | 'r' | 't'> = {}, t = monotonicMs()): void {
    if (this.fd === null) return;
    this.add(JSON.stringify({ m, r, t, ...extra }));
  }

  /** Writes the lines gathered so far (the stage ends a request: before main hears of it). */
  flush(): void {
    if (this.fd === null || this.lines.length === 0) return;
    const text = this.lines.join('\n') + '\n';
    this.lines = [];
    this.bytes = 0;
    writeSync(this.fd, text);
  }

  close(): void {
    this.flush();
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    process.off('exit', this.onExit);
  }

  private add(line: string): void {
    this.lines.push(line);
    this.bytes += line.length + 1;
    if (this.bytes >= FLUSH_BYTES) this.flush();
  }
}
