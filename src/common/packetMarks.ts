/**
 * Marks on a first packet's path (and each audio chunk's) for `chorus bench`'s account of where its milliseconds went
 * (bench/ttfp/account/). Every time is on the machine's monotonic clock (CLOCK_MONOTONIC, as process.hrtime), which
 * all processes of one host share, so main's marks, the stages' (their step traces, src/worker/StepTrace.ts) and the
 * bench client's line up without any offset estimate. Wall-clock times (Date.now(), or performance.timeOrigin + now,
 * fixed per process at its start) can disagree between processes by a millisecond, as much as a hop takes.
 *
 * Main publishes its marks on diagnostics_channel `chorus:packet:mark` (nothing is made without a subscriber); the
 * stages write theirs to their step trace when CHORUS_STEP_TRACE_DIR is set.
 */
import { channel } from 'node:diagnostics_channel';

/** Milliseconds on the monotonic clock every process of the machine shares. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * monotonicMs() - performance.now() in this process: both run on the monotonic clock, so it is constant. Read
 * between two performance.now() calls, the closest pair of a few: the first use of `performance` in a process loads
 * perf_hooks (measured here: 3-30 ms), which a naive `monotonicMs() - performance.now()` counts into the offset.
 */
export const PERF_TO_MONOTONIC_MS = perfOffset();

function perfOffset(): number {
  performance.now();
  let best = Number.POSITIVE_INFINITY;
  let offset = 0;
  for (let i = 0; i < 5; i++) {
    const before = performance.now();
    const mono = monotonicMs();
    const after = performance.now();
    if (after - before < best) [best, offset] = [after - before, mono - (before + after) / 2];
  }
  return offset;
}

export const PACKET_MARK_CHANNEL = 'chorus:packet:mark';

/**
 * One mark in main: `mark` names the point (frame, create, generate, tokenized, routed, adding, got, delivered,
 * audio_event, handed, written); `from` the stage a chunk came from (got, delivered).
 */
export interface PacketMark {
  readonly requestId: string;
  readonly mark: string;
  readonly atMs: number;
  readonly from?: string;
}

const marks = channel(PACKET_MARK_CHANNEL);

/** True when someone listens: callers skip reading clocks otherwise. */
export function packetMarksOn(): boolean {
  return marks.hasSubscribers;
}

/** Publishes a mark at `atMs` (monotonic; default now) when someone listens. */
export function packetMark(requestId: string, mark: string, atMs?: number, from?: string): void {
  if (!marks.hasSubscribers) return;
  const m: PacketMark = { requestId, mark, atMs: atMs ?? monotonicMs(), ...(from ? { from } : {}) };
  marks.publish(m);
}
