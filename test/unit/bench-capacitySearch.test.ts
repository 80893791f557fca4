/**
 * The capacity search of `chorus bench --find-capacity` (bench/ttfp/openLoop/capacitySearch.ts) on a fake server
 * model: requests whose first audio comes after a queueing delay that rises with the offered rate and, beyond the
 * model's capacity, grows through the step. The search must bracket and bisect to the model's capacity; a step is
 * judged on its quantile, its second half, its underruns and its refusals.
 */
import { describe, expect, it } from 'vitest';
import {
  judgeStep,
  searchCapacity,
  type CapacityStep,
  type StepCriteria,
} from '../../bench/ttfp/openLoop/capacitySearch.ts';
import type { OpenLoopRecord } from '../../bench/ttfp/openLoop/openLoopStats.ts';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';

const WINDOW_MS = 20_000;
const criteria: StepCriteria = { sloTtfpMs: 1_000, quantile: 0.95, windowMs: WINDOW_MS };

/** A completed request sent at dueMs whose first audio (1 s of it, played on time) came ttfpMs later. */
function served(dueMs: number, ttfpMs: number, underrun = false): OpenLoopRecord {
  const startMs = 1_000 + dueMs;
  const events: RequestTrace['events'] = [
    { type: 'text', atMs: startMs + ttfpMs / 2 },
    { type: 'audio', atMs: startMs + ttfpMs, samples: 24_000, sampleRateHz: 24_000 },
    // The second second of audio after the first has played out (+ 500 ms): an underrun.
    { type: 'audio', atMs: startMs + ttfpMs + (underrun ? 1_500 : 100), samples: 24_000, sampleRateHz: 24_000 },
    { type: 'done', atMs: startMs + ttfpMs + 1_600 },
  ];
  return { dueMs, originMs: 1_000, endMs: startMs + ttfpMs + 1_600, trace: { startMs, events, ok: true } };
}

function refused(dueMs: number): OpenLoopRecord {
  const startMs = 1_000 + dueMs;
  return { dueMs, originMs: 1_000, endMs: startMs + 2, trace: { startMs, events: [], ok: false, error: 'HTTP 429' } };
}

/**
 * The fake server: a rate r against capacity C. Below it first audio takes base / (1 - r/C) (queueing); above it the
 * backlog grows by (r - C) requests a second, each costing 1/C s, so a request due at t waits (r - C) t / C more.
 */
function fakeServer(capacity: number, baseMs = 200) {
  const calls: number[] = [];
  const probe = (rate: number): Promise<CapacityStep> => {
    calls.push(rate);
    const count = Math.round((rate * WINDOW_MS) / 1000);
    const records = Array.from({ length: count }, (_, i) => {
      const dueMs = (i + 0.5) * (WINDOW_MS / count);
      const ttfp =
        rate < capacity ? baseMs / (1 - rate / capacity) : baseMs * 20 + ((rate - capacity) * dueMs) / capacity;
      return served(dueMs, ttfp);
    });
    return Promise.resolve(judgeStep(rate, records, criteria));
  };
  return { probe, calls };
}

describe('searchCapacity on a fake server', () => {
  // base 200 ms, SLO 1000 ms: a rate passes while 200 / (1 - r/C) <= 1000, i.e. r <= 0.8 C.
  it('doubles to a bracket, then bisects to within the tolerance of the model capacity', async () => {
    const { probe, calls } = fakeServer(10);
    const r = await searchCapacity(probe, {
      startRate: 1,
      minRate: 0.1,
      maxRate: 1000,
      relTolerance: 0.05,
      maxSteps: 20,
    });
    expect(calls.slice(0, 4)).toEqual([1, 2, 4, 8]);
    expect(calls[4]).toBe(16);
    expect(r.capacity!).toBeLessThanOrEqual(8);
    expect(r.capacity!).toBeGreaterThan(8 / 1.05);
    expect(r.failedAt!).toBeGreaterThan(8);
    expect((r.failedAt! - r.capacity!) / r.capacity!).toBeLessThanOrEqual(0.05);
    expect(r.steps.map((s) => s.rate)).toEqual(calls);
  });

  it('halves from a start above capacity, and says when nothing passes', async () => {
    const { probe, calls } = fakeServer(2);
    const r = await searchCapacity(probe, {
      startRate: 16,
      minRate: 0.5,
      maxRate: 100,
      relTolerance: 0.1,
      maxSteps: 20,
    });
    expect(calls.slice(0, 4)).toEqual([16, 8, 4, 2]);
    expect(r.capacity!).toBeGreaterThan(1.6 / 1.1);
    expect(r.capacity!).toBeLessThanOrEqual(1.6);
    const none = await searchCapacity(fakeServer(0.1).probe, {
      startRate: 4,
      minRate: 1,
      maxRate: 100,
      relTolerance: 0.1,
      maxSteps: 20,
    });
    expect(none.capacity).toBeNull();
    expect(none.steps.map((s) => s.rate)).toEqual([4, 2, 1]);
  });

  it('stops at maxSteps', async () => {
    const r = await searchCapacity(fakeServer(10).probe, {
      startRate: 1,
      minRate: 0.1,
      maxRate: 1000,
      relTolerance: 0.001,
      maxSteps: 7,
    });
    expect(r.steps).toHaveLength(7);
  });
});

describe('judgeStep', () => {
  const steady = (n: number, ttfp: number) => Array.from({ length: n }, (_, i) => served((i * WINDOW_MS) / n, ttfp));

  it('passes a steady step within the SLO, with a drift near 1 and its tail samples', () => {
    const s = judgeStep(5, steady(100, 400), criteria);
    expect(s).toMatchObject({ passed: true, why: '', completed: 100, refused: 0, underruns: 0, tailSamples: 5 });
    expect(s.ttfpQuantileMs).toBeCloseTo(400);
    expect(s.drift).toBeCloseTo(1);
  });

  it('fails on the second half of a step whose queue is still growing, though the whole is within', () => {
    // 70 % of the requests at 300 ms, then the last 30 % (all in the second half) at 1.5 s.
    const records = Array.from({ length: 100 }, (_, i) => served((i * WINDOW_MS) / 100, i < 70 ? 300 : 1_500));
    const whole = judgeStep(5, records, { ...criteria, quantile: 0.5 });
    expect(whole.ttfpQuantileMs!).toBeLessThanOrEqual(1_000);
    expect(whole.passed).toBe(false);
    expect(whole.why).toMatch(/second half's TTFP p50 1500 ms > 1000 ms/);
    expect(whole.drift!).toBeGreaterThan(2);
  });

  it('fails on underruns, on refusals beyond 1 %, and on other failures', () => {
    const underran = [...steady(50, 300), served(10_000, 300, true)];
    expect(judgeStep(5, underran, criteria)).toMatchObject({ passed: false, underruns: 1, why: '1 underran' });
    expect(judgeStep(5, [...steady(100, 300), refused(5_000)], criteria).passed).toBe(true); // < 1 %
    const shed = [...steady(50, 300), refused(5_000), refused(6_000)];
    expect(judgeStep(5, shed, criteria)).toMatchObject({ passed: false, refused: 2, why: '2 refused' });
    const timedOut: OpenLoopRecord = { ...refused(1), trace: { startMs: 1, events: [], ok: false, error: 'timeout' } };
    expect(judgeStep(5, [...steady(50, 300), timedOut], criteria)).toMatchObject({ passed: false, failed: 1 });
  });
});
