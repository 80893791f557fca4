/**
 * Admission counts batch seats (src/engine/routing/SeatWait.ts): the wait for a seat when every one is held, when
 * a holder is expected to leave, and the router's estimate with a Thinker whose seats are all taken, without
 * processes.
 */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { StageGraph } from '../../src/common/graph.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { newInstance } from '../../src/engine/pool/StageInstance.ts';
import { Router } from '../../src/engine/routing/Router.ts';
import { remainingHoldMs, seatWaitMs, turnWaitMs } from '../../src/engine/routing/SeatWait.ts';

describe('seatWaitMs', () => {
  it('is 0 with a seat free', () => {
    expect(seatWaitMs(4, [9_000, 9_000, 9_000])).toBe(0);
  });

  it('waits for the first holder to leave when every seat is held, then one more per request ahead', () => {
    expect(seatWaitMs(3, [5_000, 1_000, 3_000])).toBe(1_000);
    // Two already wait for a seat: the third holder to leave frees this one's.
    expect(seatWaitMs(3, [5_000, 1_000, 3_000, 7_000, 2_000])).toBe(3_000);
  });
});

describe('turnWaitMs', () => {
  it('is 0 with a seat free, one turn for the first beyond the seats, one more per `seats` ahead', () => {
    expect(turnWaitMs(4, 3, 80)).toBe(0);
    expect(turnWaitMs(4, 4, 80)).toBe(80);
    expect(turnWaitMs(4, 7, 80)).toBe(80);
    expect(turnWaitMs(4, 8, 80)).toBe(160);
  });
});

describe('remainingHoldMs', () => {
  it('expects a young holder to leave after the rest of the usual hold', () => {
    expect(remainingHoldMs(1_000, 4_000)).toBe(3_000);
  });

  it('expects one past half the usual hold (a long answer) to run as long again as it has', () => {
    expect(remainingHoldMs(3_000, 4_000)).toBe(3_000);
    expect(remainingHoldMs(10_000, 4_000)).toBe(10_000);
    expect(remainingHoldMs(10_000, null)).toBe(10_000);
  });
});

describe('Router.estimate with every Thinker seat held', () => {
  afterEach(() => vi.useRealTimers());
  let graph: StageGraph;
  beforeAll(async () => {
    graph = await loadConfig(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'));
  });
  let nextTokenId = 1;
  const textPrompt = (tokens: number): PreparedPrompt => ({
    promptTokenIds: new Array<number>(tokens).fill(nextTokenId++),
    items: [],
    spans: [],
  });

  it('adds the wait for a seat to the queue, first text and first audio, and nothing once a seat is free', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const index = graph.stages.findIndex((s) => s.stageId === graph.entryStageId);
    const entry = graph.stages[index];
    const thinker = newInstance(graph, index, 0, 'thinker#0');
    thinker.status = 'ready';
    const router = new Router('ttft', new Map([[thinker.instance, thinker]]));
    const route = (id: string) => {
      const ticket = router.route(id, entry.stageId, [entry], textPrompt(50), (_s, pick) => pick()).book()!;
      thinker.inFlight.add(id); // as the pool does when it sends the add
      return ticket;
    };
    // One short request teaches the usual hold (2 s) and the first audio.
    const short = route('short');
    short.firstToken(Date.now() + 100);
    short.firstAudio(Date.now() + 300);
    vi.setSystemTime(Date.now() + 2_000);
    short.release();
    thinker.inFlight.delete('short');
    const freeSeat = router.estimate(entry)!;

    // Long answers take every seat, and run on for 10 s.
    const seats = entry.engine.maxNumSeqs;
    const long = Array.from({ length: seats }, (_, i) => route(`long${i}`));
    vi.setSystemTime(Date.now() + 10_000);
    const full = router.estimate(entry)!;
    // Past their usual 2 s hold, each is expected to run 10 s more: the first seat frees in 10 s.
    expect(full.queueMs).toBeGreaterThanOrEqual(10_000);
    expect(full.ttftMs).toBeGreaterThanOrEqual(10_000);
    expect(full.ttfpMs!).toBeGreaterThanOrEqual(10_000);
    expect(freeSeat.ttfpMs!).toBeLessThan(10_000);

    // With seat turns (the default) and the instance's step time known, the long answers yield their seats within
    // a turn: seat_turn_steps steps of 10 ms, not their 10 s.
    const turnSteps = entry.engine.seatTurnSteps!;
    expect(turnSteps).toBeGreaterThan(0);
    thinker.stats = { stepMs: 10 } as NonNullable<typeof thinker.stats>;
    const inTurns = router.estimate(entry)!;
    // The seat part of the estimate is one turn (the first beyond the seats) instead of 10 s; the rest stays.
    expect(full.queueMs - inTurns.queueMs).toBeCloseTo(10_000 - turnSteps * 10, 6);
    expect(full.ttfpMs! - inTurns.ttfpMs!).toBeCloseTo(10_000 - turnSteps * 10, 6);
    thinker.stats = null;

    // Paused for their clients, they hold no seat (ArScheduler.pause): no wait for one.
    expect(router.estimate(entry, () => false)!.queueMs).toBeLessThan(10_000);

    // One leaves: a seat is free, the wait is gone (what remains is the charge for the live requests).
    long[0].release();
    thinker.inFlight.delete('long0');
    expect(router.estimate(entry)!.queueMs).toBeLessThan(10_000);
    for (const t of long.slice(1)) t.release();
  });
});
