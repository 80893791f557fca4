/**
 * The machine's CPU wake-up latency held while requests are live (src/common/cpuWakeupLatency.ts): the value written
 * as the kernel reads it, held while busy and through the linger, let go after it; a file that cannot be opened is
 * said once with what to do; the engine's registry tells it when the first request comes and the last goes. On a
 * machine where this process may write /dev/cpu_dma_latency (CI runs as root), the kernel's own figure is read back.
 */
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, readlinkSync, readdirSync, rmSync } from 'node:fs';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { endianness, tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import {
  CPU_LATENCY_DEVICE,
  CPU_LATENCY_LINGER_MS,
  CPU_LATENCY_NOT_HELD,
  CpuWakeupLatency,
} from '../../src/common/cpuWakeupLatency.ts';
import { RequestRegistry } from '../../src/engine/requests/RequestRegistry.ts';
import type { RequestRecord } from '../../src/engine/requests/RequestRecord.ts';

const silent = pino({ level: 'silent' });

/** The files this process has open on `file` (by /proc/self/fd). */
function openOn(file: string): number {
  let n = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // closed while listed (readdirSync's own descriptor)
    }
  }
  return n;
}

const s32 = (b: Buffer) => (endianness() === 'LE' ? b.readInt32LE(0) : b.readInt32BE(0));

describe('CpuWakeupLatency', () => {
  let dir: string;
  let device: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'chorus-qos-'));
    device = path.join(dir, 'cpu_dma_latency');
    closeSync(openSync(device, 'w'));
  });
  afterEach(() => {
    vi.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes the value as the kernel reads a 4-byte write, holds through the linger and lets go after it', () => {
    vi.useFakeTimers();
    const held: boolean[] = [];
    const listener = (m: unknown) => held.push((m as { held: boolean }).held);
    subscribe(channelNames.cpuWakeupLatency, listener);
    try {
      const qos = new CpuWakeupLatency({ us: 25, log: silent, device, lingerMs: 1_000 });
      expect(qos.held).toBe(false);
      qos.busy();
      expect(qos.held).toBe(true);
      const written = readFileSync(device);
      expect(written.length).toBe(4);
      expect(s32(written)).toBe(25);
      expect(openOn(device)).toBe(1);
      qos.busy(); // a second request: still one hold
      expect(openOn(device)).toBe(1);

      qos.idle();
      vi.advanceTimersByTime(999);
      expect(qos.held).toBe(true);
      qos.busy(); // work again within the linger: the hold stays, the linger is cancelled
      vi.advanceTimersByTime(5_000);
      expect(qos.held).toBe(true);

      qos.idle();
      vi.advanceTimersByTime(1_000);
      expect(qos.held).toBe(false);
      expect(openOn(device)).toBe(0);
      expect(held).toEqual([true, false]);
    } finally {
      unsubscribe(channelNames.cpuWakeupLatency, listener);
    }
  });

  it('lets go at once on close, linger or not, and idle without a hold does nothing', () => {
    vi.useFakeTimers();
    const qos = new CpuWakeupLatency({ us: 0, log: silent, device });
    qos.idle();
    expect(vi.getTimerCount()).toBe(0);
    qos.busy();
    qos.idle();
    expect(qos.held).toBe(true);
    qos.close();
    expect([qos.held, openOn(device), vi.getTimerCount()]).toEqual([false, 0, 0]);
    expect(CPU_LATENCY_LINGER_MS).toBeGreaterThan(0);
  });

  it('says once, with what to do, when the file is not there, and serves on without it', () => {
    const warn = vi.fn();
    const log = { ...silent, warn } as unknown as typeof silent;
    const qos = new CpuWakeupLatency({ us: 0, log, device: path.join(dir, 'missing') });
    qos.busy();
    qos.busy();
    expect(qos.held).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatchObject({ code: CPU_LATENCY_NOT_HELD });
    expect(qos.refused).toMatch(/has no .*missing.*cpu_wakeup_latency_us: null/);
  });

  it("is asked for by a config's value, not by null or an absent key", () => {
    expect(CpuWakeupLatency.asked(null, silent)).toBeNull();
    expect(CpuWakeupLatency.asked(undefined, silent)).toBeNull();
    const qos = CpuWakeupLatency.asked(0, silent, { device });
    qos!.busy();
    expect(s32(readFileSync(device))).toBe(0);
    qos!.close();
  });

  it('refuses a value the kernel would not take', () => {
    expect(() => new CpuWakeupLatency({ us: -1, log: silent, device })).toThrow(RangeError);
    expect(() => new CpuWakeupLatency({ us: 1.5, log: silent, device })).toThrow(RangeError);
  });

  // The real file: held at 0, the kernel's figure (the smallest of every hold on the machine) reads 0; without
  // write access the refusal names it.
  it('holds the kernel at 0 where this process may, else says it needs write access', () => {
    if (!existsSync(CPU_LATENCY_DEVICE)) {
      const qos = new CpuWakeupLatency({ us: 0, log: silent });
      qos.busy();
      expect([qos.held, qos.refused]).toEqual([false, expect.stringMatching(/this kernel has no/)]);
      return;
    }
    const qos = new CpuWakeupLatency({ us: 0, log: silent });
    qos.busy();
    try {
      if (process.getuid?.() === 0) {
        expect(qos.held).toBe(true);
        expect(s32(readFileSync(CPU_LATENCY_DEVICE))).toBe(0);
      } else if (!qos.held) {
        expect(qos.refused).toMatch(/needs write access/);
      }
    } finally {
      qos.close();
    }
    expect(openOn(CPU_LATENCY_DEVICE)).toBe(0);
  });
});

describe('RequestRegistry tells when requests are live', () => {
  const record = (requestId: string) => ({ requestId, release: () => {} }) as unknown as RequestRecord;

  it('on the first request in and the last one out, not in between', () => {
    const live: boolean[] = [];
    const registry = new RequestRegistry((l) => live.push(l));
    const [a, b] = [record('a'), record('b')];
    registry.add(a);
    registry.add(b);
    registry.release(a);
    registry.release(a); // released twice: no second word
    expect(live).toEqual([true]);
    registry.release(b);
    expect(live).toEqual([true, false]);
    registry.add(record('c'));
    expect(live).toEqual([true, false, true]);
  });
});
