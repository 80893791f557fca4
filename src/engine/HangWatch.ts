/**
 * Tells a hung stage instance from a busy one. An instance with requests in flight that has sent nothing for
 * stage_hang_ms is hung when its process also used no CPU over the last CPU window (stage_hang_ms, at least 500 ms,
 * so that a process starved by a busy machine still shows some): stopped (SIGSTOP), or stuck waiting. A long single
 * step (a big prefill) is silent too, but its process is computing, so it is left alone; only a silence of
 * 15 x stage_hang_ms (at least 30 s) is hung whatever the CPU says (a step that never ends).
 */
import { cpuTicksOf } from './processCpu.ts';

export interface CpuSample {
  readonly atMs: number;
  readonly ticks: number;
}

/** What the watch reads of an instance (the Orchestrator's slot). */
export interface WatchedInstance {
  readonly status: string;
  readonly worker: { readonly pid: number | null } | null;
  readonly inFlight: { readonly size: number };
  readonly lastHeardMs: number;
  cpuSamples: CpuSample[];
}

export class HangWatch {
  constructor(private readonly hangMs: number) {}

  /** How often to look (a quarter of stage_hang_ms, at least 50 ms). */
  get intervalMs(): number {
    return Math.max(50, this.hangMs / 4);
  }

  /** Samples the instance's CPU time; returns how long it has been silent if it is hung now, else null. */
  silentAndIdle(slot: WatchedInstance, now: number): number | null {
    const pid = slot.worker?.pid ?? null;
    if (slot.status !== 'ready' || pid === null) return null;
    const windowMs = Math.max(500, this.hangMs);
    const ticks = cpuTicksOf(pid);
    if (ticks !== null) slot.cpuSamples.push({ atMs: now, ticks });
    while (slot.cpuSamples.length > 1 && slot.cpuSamples[1].atMs <= now - windowMs) slot.cpuSamples.shift();
    const silentMs = now - slot.lastHeardMs;
    if (slot.inFlight.size === 0 || silentMs < this.hangMs) return null; // idle, or heard from recently
    const reference = slot.cpuSamples[0];
    if (ticks === null || !reference || reference.atMs > now - windowMs) return null; // not a full window yet
    const computing = ticks > reference.ticks;
    if (computing && silentMs < Math.max(30_000, 15 * this.hangMs)) return null; // one long step
    return silentMs;
  }
}
