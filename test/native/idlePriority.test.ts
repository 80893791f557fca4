/**
 * addon.atIdlePriority runs a function with the calling thread in Linux's idle scheduling class (a stage's keep-warm
 * step, src/worker/stageMain.ts) and puts it back after, whatever the function throws; where the kernel would not
 * let the thread back out (idlePriorityAvailable false) it runs the function at the thread's own priority.
 */
import { describe, expect, it } from 'vitest';
import { SCHED_IDLE, schedPolicyOf } from '../../src/common/schedIdle.ts';
import { addon } from '../../transport/shm/binding.ts';

const SCHED_OTHER = 0;

describe('addon.atIdlePriority', () => {
  it('runs the function in SCHED_IDLE where the thread can leave it again, and leaves it after', () => {
    const available = addon.idlePriorityAvailable();
    expect(schedPolicyOf(process.pid)).toBe(SCHED_OTHER);
    let during: number | null = null;
    const ran = addon.atIdlePriority(() => (during = schedPolicyOf(process.pid)));
    expect(ran).toBe(available);
    expect(during).toBe(available ? SCHED_IDLE : SCHED_OTHER);
    expect(schedPolicyOf(process.pid)).toBe(SCHED_OTHER);
  });

  it('puts the thread back when the function throws, and throws what it threw', () => {
    expect(() =>
      addon.atIdlePriority(() => {
        throw new Error('the warm-up failed');
      }),
    ).toThrow('the warm-up failed');
    expect(schedPolicyOf(process.pid)).toBe(SCHED_OTHER);
  });

  it('is available to root (CAP_SYS_NICE: CI runs as root, as the CPU latency hold needs)', () => {
    if (process.getuid?.() === 0) expect(addon.idlePriorityAvailable()).toBe(true);
    else expect(typeof addon.idlePriorityAvailable()).toBe('boolean'); // the kernel's answer for this user's limits
  });
});
