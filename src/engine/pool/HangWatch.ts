/**
 * Tells a hung stage instance from a busy one. An instance with requests in flight that has sent nothing for
 * stage_hang_ms is hung when its process also used no CPU over the last CPU window (stage_hang_ms, at least 500 ms,
 * so that a process starved by a busy machine still shows some): stopped (SIGSTOP), or stuck waiting. A long single
 * step (a big prefill) is silent too, but its process is computing, so it is left alone until the CPU it has used
 * since it went silent passes 15 x stage_hang_ms (at least 30 s): a step that never ends. CPU time, not wall time:
 * on a machine busy enough to starve the stage (its processes run at a lower priority than the server, stage_nice),
 * a step that takes 3 s alone took 45 s of wall time beside four busy processes, and restarting the stage then would
 * add its boot to the load and fail every request it held. Nor is a process that used no CPU but waited for one
 * (its run-queue wait grew over the window), or that is runnable now (state R: the kernel counts a run-queue wait
 * only when it ends, so a thread that has waited the whole window for a CPU it never got shows no wait yet): starved,
 * not stopped. A stage below the others (engine.nice) on a machine busy with other work can go a whole window
 * without a tick; restarting it would only fail its requests (at load ~47 a Thinker at nice 8 was restarted so, its
 * run-queue wait flat for 2.6 s while it was runnable: a nice-19 busy loop there showed R, no tick and a flat wait
 * for 6 s).
 */
import { CLOCK_TICKS_PER_SECOND, cpuTicksOf, processStateOf, runQueueWaitMsOf } from '../../common/processCpu.ts';

export interface CpuSample {
  readonly atMs: number;
  readonly ticks: number;
  /** Its run-queue wait then (ms), null when unknown. */
  readonly waitMs?: number | null;
}

/** What the watch reads of an instance (the Orchestrator's slot). */
export interface WatchedInstance {
  readonly status: string;
  readonly worker: { readonly pid: number | null } | null;
  readonly inFlight: { readonly size: number };
  readonly lastHeardMs: number;
  cpuSamples: CpuSample[];
  /** The process's CPU ticks when last seen heard from (or idle): a silence's CPU is counted from there. */
  cpuTicksWhenHeard: number | null;
}

/** Why an instance is hung, and how long it has been silent. */
export type Hang =
  /** No CPU over the last window: stopped, or stuck waiting. */
  | { readonly kind: 'stopped'; readonly silentMs: number }
  /** Computing all along, past runawayCpuMs of CPU since it went silent: a step that never ends. */
  | { readonly kind: 'runaway'; readonly silentMs: number; readonly cpuMs: number };

export class HangWatch {
  /** CPU a single silent step may use before it counts as one that never ends. */
  readonly runawayCpuMs: number;

  constructor(
    private readonly hangMs: number,
    private readonly ticksOf: (pid: number) => number | null = cpuTicksOf,
    private readonly waitOf: (pid: number) => number | null = runQueueWaitMsOf,
    private readonly stateOf: (pid: number) => string | null = processStateOf,
  ) {
    this.runawayCpuMs = Math.max(30_000, 15 * hangMs);
  }

  /** How often to look (a quarter of stage_hang_ms, at least 50 ms). */
  get intervalMs(): number {
    return Math.max(50, this.hangMs / 4);
  }

  /** Samples the instance's CPU time; returns why it is hung if it is hung now, else null. */
  hangOf(slot: WatchedInstance, now: number): Hang | null {
    const pid = slot.worker?.pid ?? null;
    if (slot.status !== 'ready' || pid === null) return null;
    const windowMs = Math.max(500, this.hangMs);
    const ticks = this.ticksOf(pid);
    const waitMs = this.waitOf(pid);
    if (ticks !== null) slot.cpuSamples.push({ atMs: now, ticks, waitMs });
    while (slot.cpuSamples.length > 1 && slot.cpuSamples[1].atMs <= now - windowMs) slot.cpuSamples.shift();
    const silentMs = now - slot.lastHeardMs;
    if (slot.inFlight.size === 0 || silentMs < this.hangMs) {
      slot.cpuTicksWhenHeard = ticks; // idle, or heard from recently
      return null;
    }
    const reference = slot.cpuSamples[0];
    if (ticks === null || !reference || reference.atMs > now - windowMs) return null; // not a full window yet
    if (ticks === reference.ticks) {
      // Waited for a CPU over the window, or waiting for one now: starved, not stopped.
      const waited = waitMs !== null && reference.waitMs != null && waitMs > reference.waitMs;
      return waited || this.stateOf(pid) === 'R' ? null : { kind: 'stopped', silentMs };
    }
    const cpuMs = ((ticks - (slot.cpuTicksWhenHeard ?? reference.ticks)) * 1000) / CLOCK_TICKS_PER_SECOND;
    return cpuMs < this.runawayCpuMs ? null : { kind: 'runaway', silentMs, cpuMs }; // else one long step
  }
}
