/**
 * Linux's CPU latency QoS (`cpu_wakeup_latency_us`): while a process keeps /dev/cpu_dma_latency open with a value
 * written to it, no core of the machine enters an idle state that takes longer than that many microseconds to leave
 * (the kernel's PM QoS, Documentation/power/pm_qos_interface.rst); closing the file (or the process ending, however it
 * ends) lets go. Every stage hop of a request wakes a process that sleeps, often on a core that is idle; on a VM whose
 * idle vCPUs halt (the guest's haltpoll driver with guest_halt_poll_ns 0 on this project's machines) each such
 * wake-up is a VM exit and the host scheduling the vCPU again. At 0 the idle cores poll instead of halting: two
 * processes pinned to the two cores answered each other through pipes in 108 us a round trip, in 20 us with it held
 * (bench/NOTES.md, "Idle cores that poll"). The price: an idle core burns its CPU (power; on a shared host, time
 * the host could give a neighbour), so main holds it only while requests are live, and a linger after the last
 * (a conversation's next turn comes within seconds).
 *
 * Opening the file takes root (or a udev rule giving the server's user write access); where it cannot be opened the
 * server runs with the machine's idle states, says why once (CHORUS_WARN_CPU_LATENCY_NOT_HELD), and /metrics'
 * chorus_cpu_wakeup_latency_holds stays 0.
 */
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { endianness } from 'node:os';
import { diagnostics } from './diagnostics.ts';
import type { Logger } from './log.ts';

export const CPU_LATENCY_DEVICE = '/dev/cpu_dma_latency';

/** How long the hold outlives the last live request (ms): a conversation's next turn finds the cores polling. */
export const CPU_LATENCY_LINGER_MS = 2_000;

/** The warning's stable code (logs): the setting asked for a hold this process could not take. */
export const CPU_LATENCY_NOT_HELD = 'CHORUS_WARN_CPU_LATENCY_NOT_HELD';

export interface CpuWakeupLatencyOptions {
  /** The longest exit latency (us) an idle core may have while held; 0: idle cores poll. */
  readonly us: number;
  readonly log: Logger;
  readonly lingerMs?: number;
  /** The PM QoS file (tests point it elsewhere). */
  readonly device?: string;
}

/** A hold of the machine's CPU wake-up latency, taken while the work it is for runs (busy) and let go after (idle). */
export class CpuWakeupLatency {
  #fd: number | null = null;
  #linger: NodeJS.Timeout | null = null;
  /** Why the file could not be opened, once it could not (never asked again: the answer would not change). */
  #refused: string | null = null;
  readonly #device: string;
  readonly #lingerMs: number;

  /** The hold a config's `cpu_wakeup_latency_us` asks for, or null when it asks for none (null or absent). */
  static asked(
    us: number | null | undefined,
    log: Logger,
    opts: Omit<CpuWakeupLatencyOptions, 'us' | 'log'> = {},
  ): CpuWakeupLatency | null {
    return us === null || us === undefined ? null : new CpuWakeupLatency({ ...opts, us, log });
  }

  constructor(private readonly opts: CpuWakeupLatencyOptions) {
    if (!Number.isInteger(opts.us) || opts.us < 0) throw new RangeError(`cpu wake-up latency ${opts.us} us`);
    this.#device = opts.device ?? CPU_LATENCY_DEVICE;
    this.#lingerMs = opts.lingerMs ?? CPU_LATENCY_LINGER_MS;
  }

  /** Whether the hold is in force now. */
  get held(): boolean {
    return this.#fd !== null;
  }

  /** Why it cannot be held on this machine (null: it can, or has not been tried). */
  get refused(): string | null {
    return this.#refused;
  }

  /** Work is live: hold now (a linger in progress is cancelled). */
  busy(): void {
    if (this.#linger) clearTimeout(this.#linger);
    this.#linger = null;
    if (this.#fd !== null || this.#refused !== null) return;
    try {
      const fd = openSync(this.#device, constants.O_WRONLY); // never created: the kernel's file or none
      try {
        writeSync(fd, encodeUs(this.opts.us));
      } catch (err) {
        closeSync(fd);
        throw err;
      }
      this.#fd = fd;
    } catch (err) {
      this.#refused = refusal(this.#device, err as NodeJS.ErrnoException);
      this.opts.log.warn({ code: CPU_LATENCY_NOT_HELD, device: this.#device }, this.#refused);
      return;
    }
    this.#publish(true);
  }

  /** No work is live: let go after the linger (busy again before it ends keeps the hold). */
  idle(): void {
    if (this.#fd === null || this.#linger) return;
    this.#linger = setTimeout(() => this.#release(), this.#lingerMs);
    this.#linger.unref();
  }

  /** Lets go now (the engine closes). */
  close(): void {
    if (this.#linger) clearTimeout(this.#linger);
    this.#linger = null;
    this.#release();
  }

  #release(): void {
    this.#linger = null;
    if (this.#fd === null) return;
    closeSync(this.#fd);
    this.#fd = null;
    this.#publish(false);
  }

  #publish(held: boolean): void {
    if (diagnostics.cpuWakeupLatency.hasSubscribers) diagnostics.cpuWakeupLatency.publish({ held, us: this.opts.us });
  }
}

/** The kernel reads a 4-byte write as a binary s32 in the machine's byte order (any other length as hex text). */
function encodeUs(us: number): Buffer {
  const b = Buffer.alloc(4);
  if (endianness() === 'LE') b.writeInt32LE(us);
  else b.writeInt32BE(us);
  return b;
}

/** What to do when the file cannot be opened, by why. */
function refusal(device: string, err: NodeJS.ErrnoException): string {
  const unheld = "idle cores keep the machine's idle states (set cpu_wakeup_latency_us: null to not ask)";
  if (err.code === 'EACCES' || err.code === 'EPERM')
    return (
      `cpu_wakeup_latency_us: ${device} needs write access (run the server as root, or give its user write ` +
      `access with a udev rule: KERNEL=="cpu_dma_latency", GROUP="<group>", MODE="0660"); ${unheld}`
    );
  if (err.code === 'ENOENT')
    return `cpu_wakeup_latency_us: this kernel has no ${device} (not Linux, or a container without it); ${unheld}`;
  return `cpu_wakeup_latency_us: ${device}: ${err.message}; ${unheld}`;
}
