/**
 * Admission's measured default bound (src/server/admission/measuredSlo.ts): the queue bounded by a multiple of what
 * requests alone take; and what it is measured from (AloneTimes).
 */
import { describe, expect, it } from 'vitest';
import type { FirstOutputEstimate } from '../../src/common/engine.ts';
import { AloneTimes } from '../../src/engine/routing/AloneTimes.ts';
import {
  MEASURED_FLOOR_MS,
  MEASURED_MULTIPLE,
  measuredBoundMs,
  resolveSlo,
} from '../../src/server/admission/measuredSlo.ts';
import { RateLimitedError, RequestQueue } from '../../src/server/admission/RequestQueue.ts';

const alone = { ttft: 300, ttfp: 600 };
const engine = (queueMs: number, ttfpMs: number, aloneMs = alone): FirstOutputEstimate => ({
  queueMs,
  ttftMs: ttfpMs / 2,
  ttfpMs,
  aloneMs,
});
const audio = { wantsAudio: true, chunkTimeoutMs: 30_000 };

describe('AloneTimes', () => {
  it('learns only from requests alone at admission, and gives the median once three are measured', () => {
    const t = new AloneTimes();
    t.learn('ttfp', 2, 5_000); // another request was live: not alone
    t.learn('ttfp', 1, 100);
    t.learn('ttfp', 1, 900);
    expect(t.ms('ttfp')).toBeNull();
    t.learn('ttfp', 1, 200);
    expect(t.ms('ttfp')).toBe(200);
    expect(t.ms('ttft')).toBeNull();
  });
});

describe('measuredBoundMs', () => {
  it('is the multiple of the first audio alone (text alone for a text request), floored and capped', () => {
    expect(measuredBoundMs(engine(0, 0), audio)).toBe(MEASURED_MULTIPLE * 600);
    expect(measuredBoundMs(engine(0, 0), { ...audio, wantsAudio: false })).toBe(
      Math.max(MEASURED_FLOOR_MS, MEASURED_MULTIPLE * 300),
    );
    expect(measuredBoundMs(engine(0, 0, { ttft: 10, ttfp: 40 }), audio)).toBe(MEASURED_FLOOR_MS);
    expect(measuredBoundMs(engine(0, 0, { ttft: 9_000, ttfp: 9_000 }), audio)).toBe(10_000); // chunk timeout / 3
  });

  it('is no bound before requests alone were measured', () => {
    expect(measuredBoundMs(engine(0, 0, { ttft: null, ttfp: null } as never), audio)).toBeNull();
    expect(measuredBoundMs(null, audio)).toBeNull();
  });
});

describe('resolveSlo', () => {
  it('passes figures and null through, and resolves measured', () => {
    expect(resolveSlo({ maxQueueMs: 5, sloTtfpMs: 1_500 }, null, audio)).toEqual({ maxQueueMs: 5, sloTtfpMs: 1_500 });
    expect(resolveSlo({ maxQueueMs: null, sloTtfpMs: null }, null, audio).maxQueueMs).toBeNull();
    expect(resolveSlo({ maxQueueMs: 'measured', sloTtfpMs: null }, engine(0, 0), audio)).toEqual({
      maxQueueMs: 2_400,
      sloTtfpMs: null,
    });
  });

  it("resolves a measured first-packet bound for a spoken answer's first audio only", () => {
    const settings = { maxQueueMs: 'measured', sloTtfpMs: 'measured' } as const;
    // With it, the pace of the frames is watched (admissionDecision.ts).
    expect(resolveSlo(settings, engine(0, 0), audio)).toEqual({ maxQueueMs: 2_400, sloTtfpMs: 2_400, audioPace: true });
    const text = { ...audio, wantsAudio: false };
    expect(resolveSlo(settings, engine(0, 0), text)).toEqual({ maxQueueMs: 1_200, sloTtfpMs: null, audioPace: false });
    const none = { maxQueueMs: null, sloTtfpMs: null, audioPace: false };
    expect(resolveSlo(settings, null, audio)).toEqual(none); // nothing measured: no bound
  });
});

describe('RequestQueue with the measured bound', () => {
  const limits = { maxRunning: 4, maxQueued: 4, maxWaitMs: 60_000 };

  it('refuses one that would queue past it with a Retry-After, admits a slow one that would not', async () => {
    let estimate = engine(5_000, 9_000);
    const queue = new RequestQueue(limits, {
      slo: () => ({ maxQueueMs: 'measured', sloTtfpMs: null }),
      estimate: () => estimate,
      chunkTimeoutMs: () => 30_000,
    });
    const refused = await queue.acquire(true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(3); // 5 s of queue against 2.4 s
    expect((refused as Error).message).toMatch(/max_queue_ms 2400/);
    estimate = engine(100, 60_000); // far slower, but with little ahead of it
    (await queue.acquire(true))();
  });

  it("with the default's first-packet bound: a spoken answer that would first sound too late is refused", async () => {
    // Little in line, but the steps in progress on its way put its first audio at 9 s (e.g. long answers decoding).
    const queue = new RequestQueue(limits, {
      slo: () => ({ maxQueueMs: 'measured', sloTtfpMs: 'measured' }),
      estimate: () => engine(100, 9_000),
      chunkTimeoutMs: () => 30_000,
    });
    const refused = await queue.acquire(true).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as Error).message).toMatch(/first audio in 9000 ms > slo_ttfp_ms 2400/);
    expect((refused as RateLimitedError).retryAfterSeconds).toBe(7); // 6.6 s over
    (await queue.acquire(false))(); // text: its first token is bounded by the queue only
  });
});
