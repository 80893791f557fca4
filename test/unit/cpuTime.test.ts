import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { addCpuBetween, cpuBoundRps, throughputCeiling, type CpuSnapshot } from '../../bench/ttfp/cpuTime.ts';
import { cpuMsOf, threadsCpuMsOf } from '../../src/common/processCpu.ts';

/**
 * A child that spends 300 ms of CPU, says so, and waits: `read(pid)` while it waits, and again once it is killed and
 * reaped (its /proc entry gone).
 */
async function busyChild(read: (pid: number) => number | null): Promise<{ busy: number | null; gone: number | null }> {
  const busy = 'while (process.cpuUsage().user < 300_000) {} console.log("done"); process.stdin.resume()';
  const child = spawn(process.execPath, ['-e', busy]);
  const pid = child.pid!;
  await once(child.stdout!, 'data');
  const spent = read(pid);
  const exited = once(child, 'exit');
  child.kill();
  await exited;
  return { busy: spent, gone: read(pid) };
}

describe('bench CPU accounting', () => {
  it("reads a process's CPU time from /proc, every thread counted, and null for a process that is gone", async () => {
    const own = process.cpuUsage();
    const ms = cpuMsOf(process.pid)!;
    // /proc counts in 10 ms ticks: within a few ticks of what Node says of itself.
    expect(Math.abs(ms - (own.user + own.system) / 1000)).toBeLessThan(50);

    // A child's /proc figure holds the 300 ms it spent; reaped, its /proc entry is gone.
    const child = await busyChild(cpuMsOf);
    expect(child.busy!).toBeGreaterThanOrEqual(280);
    expect(child.gone).toBeNull();
  });

  it("reads a process's threads' CPU time to well under a tick, and null for a process that is gone", async () => {
    const own = threadsCpuMsOf(process.pid)!;
    const spin = process.cpuUsage();
    while (process.cpuUsage(spin).user < 3000); // 3 ms of CPU: under /proc/<pid>/stat's 10 ms tick
    const used = process.cpuUsage(spin);
    const after = threadsCpuMsOf(process.pid)!;
    expect(after - own).toBeGreaterThanOrEqual(2.5);
    // Against what the process says it used over the same window, every thread (its GC threads may add tens of ms):
    // the same to well under a tick.
    expect(Math.abs(after - own - (used.user + used.system) / 1000)).toBeLessThan(5);
    const child = await busyChild(threadsCpuMsOf);
    expect(child.busy!).toBeGreaterThanOrEqual(300);
    expect(child.gone).toBeNull();
  });

  it('adds what each process used between snapshots, leaving out one restarted under another pid', () => {
    const before: CpuSnapshot = new Map([
      ['thinker#0', { pid: 10, ms: 100 }],
      ['talker#0', { pid: 11, ms: 200 }],
    ]);
    const after: CpuSnapshot = new Map([
      ['thinker#0', { pid: 10, ms: 160 }],
      ['talker#0', { pid: 12, ms: 30 }], // restarted: its time is another process's
      ['bench', { pid: 1, ms: 5 }], // not in before
    ]);
    const into = new Map([['thinker#0', 40]]);
    addCpuBetween(into, before, after);
    expect([...into]).toEqual([['thinker#0', 100]]);
  });

  it('bounds req/s by the CPU a request costs, and the throughput limit by the bench CPU charged beside it', () => {
    expect(cpuBoundRps(2, { thinker: 150, talker: 250, bench: 100 })).toBe(4);
    expect(cpuBoundRps(2, {})).toBeNull();
    // A stage process computes on its engine's threads: the Talker's 325 ms a request on one thread allow 3.08
    // req/s whatever the sum over the cores says (2 x 1000 / 550 = 3.64); a process not named is only in the sum.
    const served = { 'thinker#0': 150, 'talker#0': 325, 'code2wav#0': 25, bench: 50 };
    const threads = new Map([
      ['thinker', 1],
      ['talker', 1],
      ['code2wav', 1],
    ]);
    expect(cpuBoundRps(2, served, threads)).toBeCloseTo(1000 / 325, 6);
    expect(cpuBoundRps(2, served)).toBeCloseTo(2000 / 550, 6);
    expect(cpuBoundRps(2, served, new Map([['talker', 2]]))).toBeCloseTo(2000 / 550, 6);
    expect(cpuBoundRps(2, { ...served, bench: 400 }, threads)).toBeCloseTo(2000 / 900, 6); // the sum binds
    // Limit 7 req/s on 2 cores; stages alone 200 ms a request + the bench's 100: 2 cores allow 6.67 req/s.
    expect(throughputCeiling({ limit_rps: 7, cores: 2 }, 200, 100)).toBeCloseTo(6.667 / 7, 3);
    // Cores to spare: the limit stays whole.
    expect(throughputCeiling({ limit_rps: 7, cores: 8 }, 200, 100)).toBe(1);
  });
});
