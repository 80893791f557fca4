/**
 * Admission's running limit learned from first packets (src/server/admission/RunningLimit.ts) and the server's line
 * that holds requests to it (RequestQueue.firstPacket): late first packets cut it, a request beyond it is refused at
 * once with a Retry-After, first packets in time at the limit raise it again.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FirstOutputEstimate } from '../../src/common/engine.ts';
import type { AdmissionSettings } from '../../src/common/graph.ts';
import { RateLimitedError, RequestQueue } from '../../src/server/admission/RequestQueue.ts';
import {
  DECREASE,
  MIN_RUNNING_LIMIT,
  RunningLimit,
  WINDOW,
  type FirstPacketSample,
} from '../../src/server/admission/RunningLimit.ts';

const sample = (ms: number, running: number, generation = 0): FirstPacketSample => ({
  late: ms > 1_000,
  generation,
  running,
});

describe('RunningLimit', () => {
  it('starts at the maximum and lets one late first packet in a window pass (the bound is held at p95)', () => {
    const limit = new RunningLimit(32);
    expect(limit.limit).toBe(32);
    limit.observe(sample(2_500, 20));
    for (let i = 0; i < WINDOW - 1; i++) limit.observe(sample(400, 10));
    expect([limit.limit, limit.generation]).toEqual([32, 0]);
    // The late one has left the window: one more is again within the allowance.
    limit.observe(sample(2_500, 20));
    expect(limit.generation).toBe(0);
  });

  it('cuts to a share of what ran when the second late one was admitted, and ignores the older generation', () => {
    const limit = new RunningLimit(32);
    limit.observe(sample(1_400, 24));
    limit.observe(sample(2_000, 25));
    expect(limit.limit).toBe(Math.floor(25 * DECREASE));
    expect(limit.generation).toBe(1);
    // Admitted before the cut: however late, they say nothing of the new limit.
    for (let i = 0; i < 5; i++) limit.observe(sample(3_000, 30, 0));
    expect([limit.limit, limit.generation]).toEqual([20, 1]);
    limit.observe(sample(1_500, 20, 1));
    limit.observe(sample(1_600, 20, 1));
    expect(limit.limit).toBe(16);
  });

  it('never goes below the minimum: a few at a time build no queue', () => {
    const limit = new RunningLimit(32);
    for (let g = 0; g < 10; g++) {
      limit.observe(sample(5_000, 2, g));
      limit.observe(sample(5_000, 2, g));
    }
    expect(limit.limit).toBe(MIN_RUNNING_LIMIT);
    expect(new RunningLimit(2).limit).toBe(2);
  });

  it('raises the limit by one per limit of first packets in time admitted at it, up to the maximum', () => {
    const limit = new RunningLimit(12);
    limit.observe(sample(1_100, 10));
    limit.observe(sample(1_100, 10));
    expect(limit.limit).toBe(8);
    // In time but below the limit: the limit was not what held them, so it learns nothing.
    for (let i = 0; i < 20; i++) limit.observe(sample(300, 5, 1));
    expect(limit.limit).toBe(8);
    for (let i = 0; i < 9; i++) limit.observe(sample(300, 8, 1)); // + 1/8, + 1/8.125, ...
    expect(limit.limit).toBe(9);
    for (let i = 0; i < 100; i++) limit.observe(sample(300, 12, 1));
    expect(limit.limit).toBe(12);
  });
});

describe('RequestQueue running limit', () => {
  afterEach(() => vi.useRealTimers());
  const limits = { maxRunning: 16, maxQueued: 8, maxWaitMs: 60_000 };
  const engine: FirstOutputEstimate = { queueMs: 0, ttftMs: 50, ttfpMs: 100 };
  let estimates = 0;
  const queueWith = (admission: AdmissionSettings) =>
    new RequestQueue(limits, {
      slo: () => admission,
      estimate: () => {
        estimates++;
        return engine;
      },
      chunkTimeoutMs: () => 30_000,
    });

  it('refuses at once beyond the limit late first packets set, with a Retry-After, and admits within it', async () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const queue = queueWith({ maxQueueMs: null, sloTtfpMs: 1_000 });
    const slots = await Promise.all(Array.from({ length: 10 }, () => queue.acquire(true)));
    vi.advanceTimersByTime(1_500); // every first packet 1.5 s after its grant: late
    queue.firstPacket(slots[0]);
    queue.firstPacket(slots[0]); // once per slot: a repeat counts for nothing
    expect(queue.runningLimit).toBe(16);
    queue.firstPacket(slots[1]); // admitted second, but it waited beside all ten
    expect(queue.runningLimit).toBe(10 * DECREASE);
    // 10 run, the limit is 8: refused in the same turn, never lined up, with when to come back.
    const [before, estimatesBefore] = [performance.now(), estimates];
    const err = await queue.acquire(true).catch((e: unknown) => e);
    expect(performance.now() - before).toBe(0);
    expect(estimates).toBe(estimatesBefore); // cheap: refused before the engine's estimate is asked
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((err as Error).message).toMatch(/first packets lately came within the bound/);
    expect([queue.running, queue.queued]).toEqual([10, 0]);
    expect(queue.tryAcquire(true)).toBeNull(); // a Realtime response alike, told to come back as soon
    expect(queue.busyRetryAfterSeconds).toBe((err as RateLimitedError).retryAfterSeconds);
    for (const release of slots.slice(0, 3)) release();
    const admitted = await queue.acquire(true);
    expect(queue.running).toBe(8);
    admitted();
    for (const release of slots.slice(3)) release();
  });

  it('learns nothing with running_limit: fixed, nor before a bound exists', async () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    for (const admission of [
      { maxQueueMs: null, sloTtfpMs: 1_000, runningLimit: 'fixed' as const },
      { maxQueueMs: 'measured' as const, sloTtfpMs: null }, // nothing measured alone yet: no bound
    ]) {
      const queue = queueWith(admission);
      const slots = await Promise.all(Array.from({ length: 10 }, () => queue.acquire(true)));
      vi.advanceTimersByTime(60_000);
      for (const slot of slots) queue.firstPacket(slot);
      expect(queue.runningLimit).toBe(16);
      (await queue.acquire(true))();
      for (const release of slots) release();
    }
  });

  it('holds the measured default to its measured bound, and refuses those in line at a cut', async () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const measured: FirstOutputEstimate = { ...engine, aloneMs: { ttft: 100, ttfp: 300 } }; // bound: 4 x 300 ms
    const queue = new RequestQueue(
      { maxRunning: 4, maxQueued: 8, maxWaitMs: 60_000 },
      {
        slo: () => ({ maxQueueMs: 'measured', sloTtfpMs: null }),
        estimate: () => measured,
        chunkTimeoutMs: () => 30_000,
      },
    );
    const slots = await Promise.all(Array.from({ length: 4 }, () => queue.acquire(true)));
    const waiting = queue.acquire(true).catch((e: unknown) => e); // every slot taken: it lines up
    expect(queue.queued).toBe(1);
    vi.advanceTimersByTime(1_100); // within 4 x 300 ms
    queue.firstPacket(slots[0]);
    queue.firstPacket(slots[1]);
    expect(queue.queued).toBe(1);
    vi.advanceTimersByTime(200); // 1.3 s: late
    queue.firstPacket(slots[2]);
    queue.firstPacket(slots[3]);
    expect(await waiting).toBeInstanceOf(RateLimitedError);
    expect(queue.queued).toBe(0);
    for (const release of slots) release();
  });
});
