/**
 * The hang watch on a fake clock and a fake CPU counter: a silent instance that uses no CPU is hung within
 * stage_hang_ms plus a CPU window; one computing a long step is not, however long it takes on a starved machine,
 * until the CPU it used while silent passes the runaway bound; nor is one with no CPU that waits for it (its run-queue
 * wait grew, or it is runnable now).
 */
import { describe, expect, it } from 'vitest';
import { HangWatch, type Hang, type WatchedInstance } from '../../src/engine/pool/HangWatch.ts';
import { CLOCK_TICKS_PER_SECOND, processStateOf } from '../../src/common/processCpu.ts';

const HANG_MS = 2_000;

/**
 * One instance with a request in flight, last heard at t = 0, whose process gains `ticksPerSecond` of CPU and waits
 * `waitPerSecondMs` on the run queue, its main thread in `state` (/proc: T stopped, S sleeping, R runnable).
 */
function watched(ticksPerSecond: number, waitPerSecondMs = 0, state = 'T') {
  let now = 0;
  let ticks = 1_000;
  let waitMs = 5_000;
  const slot: WatchedInstance = {
    status: 'ready',
    worker: { pid: 42 },
    inFlight: { size: 1 },
    lastHeardMs: 0,
    cpuSamples: [],
    cpuTicksWhenHeard: null,
  };
  const watch = new HangWatch(
    HANG_MS,
    (pid) => (pid === 42 ? Math.floor(ticks) : null),
    (pid) => (pid === 42 ? waitMs : null),
    (pid) => (pid === 42 ? state : null),
  );
  /** Runs the watch every intervalMs for `ms`; the first hang it finds, and when. */
  const runFor = (ms: number): { hang: Hang; atMs: number } | null => {
    for (const end = now + ms; now < end;) {
      now += watch.intervalMs;
      ticks += (ticksPerSecond * watch.intervalMs) / 1000;
      waitMs += (waitPerSecondMs * watch.intervalMs) / 1000;
      const hang = watch.hangOf(slot, now);
      if (hang) return { hang, atMs: now };
    }
    return null;
  };
  return { slot, watch, runFor };
}

describe('HangWatch', () => {
  it('a silent instance using no CPU is hung once silent for stage_hang_ms over a full CPU window', () => {
    const { runFor } = watched(0);
    const found = runFor(60_000);
    expect(found?.hang).toEqual({ kind: 'stopped', silentMs: found?.atMs });
    expect(found!.atMs).toBeGreaterThanOrEqual(HANG_MS);
    expect(found!.atMs).toBeLessThanOrEqual(HANG_MS + 500);
  });

  it('one stuck waiting (asleep, no CPU) is hung as a stopped one is', () => {
    expect(watched(0, 0, 'S').runFor(60_000)?.hang.kind).toBe('stopped');
  });

  it('a starved instance computing one long step (a tenth of a core) is never hung, however long it is silent', () => {
    const { runFor } = watched(CLOCK_TICKS_PER_SECOND / 10);
    expect(runFor(120_000)).toBeNull(); // 12 s of CPU in 2 min of silence: under the runaway bound
  });

  it('a silent instance that got no CPU but waited for one all along (starved by its nice level) is not hung', () => {
    expect(watched(0, 900).runFor(60_000)).toBeNull();
  });

  it('one with no CPU and no wait counted yet, runnable all along (it never got a CPU), is starved: not hung', () => {
    // The kernel adds a run-queue wait when the wait ends: a thread that never got a CPU shows none.
    expect(watched(0, 0, 'R').runFor(60_000)).toBeNull();
  });

  it('reads a live process`s state from /proc: this one is running as it reads; a gone one has none', () => {
    expect(processStateOf(process.pid)).toBe('R');
    expect(processStateOf(2 ** 22 + 1)).toBeNull(); // above the kernel's pid_max limit: no such process
  });

  it('a step computing at full speed is hung once its CPU since it went silent passes the runaway bound', () => {
    const { watch, runFor } = watched(CLOCK_TICKS_PER_SECOND);
    const found = runFor(120_000)!;
    expect(found.hang.kind).toBe('runaway');
    const { cpuMs } = found.hang as Extract<Hang, { kind: 'runaway' }>;
    expect(cpuMs).toBeGreaterThanOrEqual(watch.runawayCpuMs);
    expect(cpuMs).toBeLessThanOrEqual(watch.runawayCpuMs + HANG_MS + 1_000); // counted from about when it went quiet
  });

  it('an instance heard from, or with nothing in flight, is not hung', () => {
    const quiet = watched(0);
    (quiet.slot as { inFlight: { size: number } }).inFlight = { size: 0 };
    expect(quiet.runFor(10_000)).toBeNull();
    const chatty = watched(0);
    const slot = chatty.slot as { lastHeardMs: number };
    for (let t = 0; t < 10_000; t += 1_000) {
      slot.lastHeardMs = t;
      expect(chatty.runFor(1_000)).toBeNull();
    }
  });
});
