/**
 * Admission on latency: the pure decision (src/server/admission/admissionDecision.ts), the estimate the Router
 * learns for it (src/engine/routing/Router.ts estimate()), and the server's line in front of the engine
 * (src/server/admission/RequestQueue.ts latencyRefusal), and what the estimate learns per live request
 * (LiveCost.ts), all without processes.
 */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { FirstOutputEstimate } from '../../src/common/engine.ts';
import type { AdmissionSlo, StageGraph } from '../../src/common/graph.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { decideAdmission, PACE_SHARE } from '../../src/server/admission/admissionDecision.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { newInstance, type StageInstance } from '../../src/engine/pool/StageInstance.ts';
import { LiveCost } from '../../src/engine/routing/LiveCost.ts';
import { Router, ROUTE_DEFAULTS, type RouteTicket } from '../../src/engine/routing/Router.ts';
import { RateLimitedError, RequestQueue } from '../../src/server/admission/RequestQueue.ts';

const NO_BOUNDS: AdmissionSlo = { maxQueueMs: null, sloTtfpMs: null };
const estimate = (queueMs: number, ttftMs: number, ttfpMs: number | null): FirstOutputEstimate => ({
  queueMs,
  ttftMs,
  ttfpMs,
});

describe('decideAdmission', () => {
  it('admits whatever the estimate without bounds', () => {
    const engine = estimate(60_000, 61_000, 62_000);
    expect(decideAdmission({ slo: NO_BOUNDS, engine, lineWaitMs: 30_000, wantsAudio: true })).toEqual({
      admit: true,
    });
  });

  it('refuses on the queue bound by the line wait plus the Thinker queue, retrying after the excess', () => {
    const slo = { maxQueueMs: 500, sloTtfpMs: null };
    const engine = estimate(300, 400, 900);
    expect(decideAdmission({ slo, engine, lineWaitMs: 100, wantsAudio: true }).admit).toBe(true);
    const d = decideAdmission({ slo, engine, lineWaitMs: 450, wantsAudio: true });
    expect(d).toMatchObject({ admit: false, retryAfterMs: 250 });
    expect(!d.admit && d.reason).toMatch(/estimated queue 750 ms > max_queue_ms 500/);
    // The line alone counts when the engine has nothing to go by.
    expect(decideAdmission({ slo, engine: null, lineWaitMs: 700, wantsAudio: false })).toMatchObject({
      admit: false,
      retryAfterMs: 200,
    });
  });

  it('holds audio requests to the first-audio estimate and text ones to the first-text one', () => {
    const slo = { maxQueueMs: null, sloTtfpMs: 1_000 };
    const engine = estimate(100, 600, 1_400);
    expect(decideAdmission({ slo, engine, lineWaitMs: 0, wantsAudio: false }).admit).toBe(true);
    const audio = decideAdmission({ slo, engine, lineWaitMs: 0, wantsAudio: true });
    expect(audio).toMatchObject({ admit: false, retryAfterMs: 400 });
    expect(!audio.admit && audio.reason).toMatch(/first audio in 1400 ms > slo_ttfp_ms 1000/);
    // Before any audio was measured the text estimate stands in; the line wait adds to it.
    expect(decideAdmission({ slo, engine: estimate(0, 900, null), lineWaitMs: 0, wantsAudio: true }).admit).toBe(true);
    expect(decideAdmission({ slo, engine: estimate(0, 900, null), lineWaitMs: 300, wantsAudio: true })).toMatchObject({
      admit: false,
      retryAfterMs: 200,
    });
    // Nothing measured: the TTFP bound cannot be judged, so it admits (the count bounds still cap).
    expect(decideAdmission({ slo, engine: null, lineWaitMs: 5_000, wantsAudio: true }).admit).toBe(true);
  });

  it('retries after the larger excess when both bounds are over', () => {
    const slo = { maxQueueMs: 200, sloTtfpMs: 1_000 };
    const d = decideAdmission({ slo, engine: estimate(500, 1_100, 3_000), lineWaitMs: 0, wantsAudio: true });
    expect(d).toMatchObject({ admit: false, retryAfterMs: 2_000 });
    expect(!d.admit && d.reason).toMatch(/max_queue_ms 200.*slo_ttfp_ms 1000/);
  });
});

describe('Router.estimate', () => {
  afterEach(() => vi.useRealTimers());
  let graph: StageGraph;
  beforeAll(async () => {
    graph = await loadConfig(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'));
  });
  // Distinct token ids per prompt: a prompt equal to an earlier one would find its blocks in the prefix cache.
  let nextTokenId = 1;
  const textPrompt = (tokens: number): PreparedPrompt => ({
    promptTokenIds: new Array<number>(tokens).fill(nextTokenId++),
    items: [],
    spans: [],
  });
  function routerWithOneThinker(): { router: Router; route: (id: string, tokens: number) => RouteTicket } {
    const index = graph.stages.findIndex((s) => s.stageId === graph.entryStageId);
    const slot: StageInstance = newInstance(graph, index, 0, 'thinker#0');
    slot.status = 'ready';
    const router = new Router('ttft', new Map([[slot.instance, slot]]));
    const entry = graph.stages[index];
    const route = (id: string, tokens: number) =>
      router.route(id, entry.stageId, [entry], textPrompt(tokens), (_s, pick) => pick()).book()!;
    return { router, route };
  }
  const entryOf = () => graph.stages.find((s) => s.stageId === graph.entryStageId)!;

  it('has nothing to go by before a request was routed', () => {
    expect(routerWithOneThinker().router.estimate(entryOf())).toBeNull();
  });

  it('charges the queued prompts at the assumed rate, and a typical prompt of its own', () => {
    const { router, route } = routerWithOneThinker();
    route('a', 400);
    route('b', 400);
    const e = router.estimate(entryOf())!;
    const perToken = 1000 / ROUTE_DEFAULTS.prefillTokensPerSecond;
    expect(e.queueMs).toBeCloseTo(800 * perToken);
    expect(e.ttftMs).toBeCloseTo(1200 * perToken);
    expect(e.ttfpMs).toBeNull();
  });

  it("learns the Thinker's rate and what a request alone misses its prediction by, charged once", () => {
    // The router reads Date.now() at admission and when it estimates: the clock stands still here, so the rate it
    // learns is exactly the one the test teaches (a tick between admission and the test's reading taught 2001 ms).
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const { router, route } = routerWithOneThinker();
    // A prompt long enough to teach a rate (MIN_RATE_SAMPLE_POSITIONS).
    const ticket = route('a', 400);
    const admittedAt = Date.now();
    // Alone, first token 2 s after admission: 200 tokens/s, far below the assumed rate its 100 ms prediction used.
    ticket.firstToken(admittedAt + 2_000);
    ticket.firstAudio(admittedAt + 2_500);
    ticket.release();
    const queued = route('b', 400);
    const e = router.estimate(entryOf())!;
    // b's 400 tokens are ahead of a newcomer (2 s at 200 tokens/s), then its own typical 400 (2 s more).
    expect(e.queueMs).toBeCloseTo(2_000);
    // Plus a's misses (1900 ms to text, 2400 to audio, with no competitor): a newcomer's own part; and for b, a
    // competitor, half of a's time alone (2000 ms to text, 2500 to audio: what one adds is not measured yet).
    expect(e.ttftMs - 2 * e.queueMs).toBeCloseTo(1_900 + 0.5 * 2_000);
    expect(e.ttfpMs! - e.ttftMs).toBeCloseTo(500 + 0.5 * 500);
    queued.release();
  });
});

describe('decideAdmission: the pace of spoken answers', () => {
  const paced = (stepMs: number): FirstOutputEstimate => ({
    ...estimate(0, 100, 200),
    audioPace: { stepMs, frameMs: 80 },
  });
  const slo = { maxQueueMs: null, sloTtfpMs: 5_000, audioPace: true };

  it('refuses a spoken answer while the frame-making steps are slower than the frames play, with 1 s to wait', () => {
    const slow = decideAdmission({ slo, engine: paced(PACE_SHARE * 80 + 1), lineWaitMs: 0, wantsAudio: true });
    expect(slow.admit).toBe(false);
    expect(!slow.admit && slow.retryAfterMs).toBe(1_000);
    expect(!slow.admit && slow.reason).toMatch(/frames made in 73 ms a step > 0.9 x the 80 ms a frame plays/);
    expect(decideAdmission({ slo, engine: paced(60), lineWaitMs: 0, wantsAudio: true }).admit).toBe(true);
  });

  it('leaves text answers, and bounds without audioPace (an operator figure), alone', () => {
    expect(decideAdmission({ slo, engine: paced(500), lineWaitMs: 0, wantsAudio: false }).admit).toBe(true);
    const fixed = { maxQueueMs: null, sloTtfpMs: 5_000 };
    expect(decideAdmission({ slo: fixed, engine: paced(500), lineWaitMs: 0, wantsAudio: true }).admit).toBe(true);
  });
});

describe('LiveCost', () => {
  const NO_WAIT = { ttft: 0, ttfp: 0 };

  it("charges a newcomer its own part (requests with no competitor) and each competitor's beyond it", () => {
    const cost = new LiveCost();
    expect(cost.extraMs('ttft')).toBeNull();
    const a = cost.admit(100, 0, 50, false, NO_WAIT);
    cost.firstToken(a, 250); // missed by 200 with no competitor: a request's own part
    cost.firstToken(a, 9_999); // learned once
    expect(cost.extraMs('ttft')).toBe(200);
    const b = cost.admit(100, 1_000, 50, false, NO_WAIT);
    // b competes: until measured, a competitor costs half of a request's time alone (a's 250 ms).
    expect(cost.extraMs('ttft')).toBe(200 + 125);
    const c = cost.admit(100, 1_000, 50, false, NO_WAIT); // b's competitors are 2 now, as c's
    expect([b.competitors, b.peakCompetitors, c.competitors]).toEqual([1, 2, 2]);
    expect(cost.pending).toBe(2);
    cost.firstToken(b, 1_650); // missed by 600 beside one other: 400 beyond its own part
    expect(cost.extraMs('ttft')).toBe(200 + 400); // c before its first packet
    cost.firstToken(c, 1_650);
    expect(cost.extraMs('ttft')).toBe(200); // nobody before a first packet: the own part only
    const d = cost.admit(100, 2_000, 50, false, NO_WAIT);
    cost.firstToken(d, 2_300); // missed by 250 alone: own misses 200, 250
    expect(cost.extraMs('ttft')).toBe(200); // the lower median
    expect(cost.live).toBe(4);
    for (const s of [a, a, b, c, d]) cost.release(s);
    expect([cost.live, cost.pending]).toEqual([0, 0]);
    // A competitor's smaller cost moves it down slowly (0.05: an upper envelope, the bound is on a tail).
    const e = cost.admit(100, 3_000, 50, false, NO_WAIT);
    const f = cost.admit(100, 3_000, 50, false, NO_WAIT);
    cost.firstToken(e, 3_350); // 300 missed beside f: 100 beyond the own part
    expect(cost.extraMs('ttft')).toBeCloseTo(200 + 400 + 0.05 * (100 - 400)); // f waits
    for (const s of [e, f]) cost.release(s);
    expect(cost.typicalPromptTokens).toBe(100);
  });

  it("does not charge each competitor a request alone's time (a closed loop's burst was refused so)", () => {
    // The assistant pipeline: a spoken answer's first audio comes ~1 s after its predicted first text, alone.
    const cost = new LiveCost();
    for (let i = 0; i < 8; i++) {
      const s = cost.admit(100, i * 10_000, 100, true, NO_WAIT);
      cost.firstAudio(s, i * 10_000 + (i === 0 ? 6_500 : 1_100)); // the first one cold
      cost.release(s);
    }
    expect(cost.ownMs('ttfp')).toBe(1_000); // the cold start outvoted
    // Four at once (c=4), each heard at 1.45 s: 450 ms beyond its own part, 150 for each of the 3 others.
    const four = [0, 1, 2, 3].map(() => cost.admit(100, 100_000, 100, true, NO_WAIT));
    expect(four.map((s) => s.peakCompetitors)).toEqual([4, 4, 4, 4]);
    for (const s of four) cost.firstAudio(s, 101_550);
    // A newcomer beside three is charged the own part and 150 ms for each, not the 4 x 1000 ms (and more: the
    // cold start's envelope) that charging each competitor a whole request's miss made of it.
    const burst = [0, 1, 2].map(() => cost.admit(100, 200_000, 100, true, NO_WAIT));
    expect(cost.extraMs('ttfp')).toBeCloseTo(1_000 + 3 * 150);
    for (const s of [...four, ...burst]) cost.release(s);
  });

  it('charges an unmeasured competitor for its time alone when predictions already cover a request alone', () => {
    // A cold first request taught a slow rate: the warm one came before its prediction (a miss below zero).
    const cost = new LiveCost();
    const cold = cost.admit(100, 0, 50, true, NO_WAIT);
    cost.firstAudio(cold, 1_500);
    cost.release(cold);
    const warm = cost.admit(100, 10_000, 900, true, NO_WAIT);
    cost.firstAudio(warm, 10_600); // 600 ms alone, 300 ms before its prediction
    cost.release(warm);
    expect(cost.ownMs('ttfp')).toBe(-300);
    // A burst: each competitor adds half of 600 ms (the lower median of 1500 and 600), never lowers the estimate.
    const burst = [0, 1, 2, 3].map(() => cost.admit(100, 20_000, 900, true, NO_WAIT));
    expect(cost.extraMs('ttfp')).toBeCloseTo(-300 + 4 * 300);
    expect(cost.estimate(900, 'ttfp', NO_WAIT)).toBeGreaterThan(900 + 600);
    for (const s of burst) cost.release(s);
  });

  it('learns no competitor as making a request faster: a burst after one is still charged for each', () => {
    const cost = new LiveCost();
    const alone = cost.admit(100, 0, 100, true, NO_WAIT);
    cost.firstAudio(alone, 1_100); // 1000 ms beyond its prediction, alone: the own part
    cost.release(alone);
    // Two together, each heard 700 ms beyond a prediction that has grown since: 300 ms under the own part.
    const pair = [0, 1].map(() => cost.admit(100, 10_000, 400, true, NO_WAIT));
    for (const s of pair) cost.firstAudio(s, 11_100);
    for (const s of pair) cost.release(s);
    const burst = [0, 1, 2, 3].map(() => cost.admit(100, 20_000, 100, true, NO_WAIT));
    // Charged -300 ms each, the fourth of a burst was estimated 900 ms under one request alone.
    expect(cost.extraMs('ttfp')).toBeGreaterThanOrEqual(cost.ownMs('ttfp')!);
    for (const s of burst) cost.release(s);
  });

  it('an audio request competes until its first audio; the steps in progress are charged as measured', () => {
    const cost = new LiveCost();
    const long = cost.admit(100, 0, 50, true, { ttft: 0, ttfp: 0 });
    cost.firstToken(long, 100);
    expect(cost.pending).toBe(1); // text out, audio not yet
    cost.firstAudio(long, 300); // 250 over its prediction, alone
    expect(cost.pending).toBe(0);
    // A newcomer beside it while it speaks: charged for itself only, plus the steps in progress on its way.
    const path = { ttft: 20, ttfp: 150 };
    expect(cost.estimate(50, 'ttfp', path)).toBeCloseTo(50 + 150 + 250);
    const n = cost.admit(100, 1_000, 50, true, path);
    expect(n.competitors).toBe(1);
    expect(n.estimatedMs.ttfp).toBeCloseTo(50 + 150 + 250);
    // Its first audio 600 ms after admission: the miss beyond its prediction and the measured steps is 400, its own.
    cost.firstAudio(n, 1_600);
    expect(cost.ownMs('ttfp')).toBe(250); // the lower median of 250 and 400
    cost.release(long);
    cost.release(n);
    expect([cost.live, cost.pending]).toEqual([0, 0]);
  });
});

describe('RequestQueue.latencyRefusal', () => {
  const limits = { maxRunning: 1, maxQueued: 4, maxWaitMs: 60_000 };

  it('refuses at once with the Retry-After of the excess, and admits within the bound', async () => {
    let engine: FirstOutputEstimate | null = estimate(0, 300, 2_600);
    const queue = new RequestQueue(limits, {
      slo: () => ({ maxQueueMs: null, sloTtfpMs: 1_000 }),
      estimate: () => engine,
      chunkTimeoutMs: () => 30_000,
    });
    const err = await queue.acquire(true).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).code).toBe('CHORUS_ERR_RATE_LIMITED');
    expect((err as RateLimitedError).retryAfterSeconds).toBe(2); // 1.6 s over, in whole seconds
    expect(queue.running).toBe(0);
    const release = await queue.acquire(false); // text: 300 ms is within the bound
    release();
    engine = null;
    (await queue.acquire(true))();
  });

  it('counts the wait in its own line once every slot is taken, from how long slots are held', async () => {
    const queue = new RequestQueue(limits, {
      slo: () => ({ maxQueueMs: 1, sloTtfpMs: null }),
      estimate: () => null,
      chunkTimeoutMs: () => 30_000,
    });
    // No hold measured yet: the line's wait is unknown, so the count bounds decide.
    const first = await queue.acquire();
    const waiting = queue.acquire();
    first(); // the waiter gets the slot; a hold time is now measured (> 0 ms of real time may be 0: wait for one)
    const second = await waiting;
    const start = performance.now();
    while (performance.now() - start < 5);
    second(); // held >= 5 ms
    const third = await queue.acquire();
    expect(queue.latencyRefusal(false, false)).toBeNull(); // a Realtime response waits in no line
    const refused = await queue.acquire().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as Error).message).toMatch(/max_queue_ms 1/);
    third();
  });

  it('refuses nothing on latency without bounds', async () => {
    const queue = new RequestQueue(limits, {
      slo: () => undefined,
      estimate: () => estimate(1e6, 1e6, 1e6),
      chunkTimeoutMs: () => 30_000,
    });
    expect(queue.latencyRefusal(true, true)).toBeNull();
    (await queue.acquire(true))();
  });
});

describe('LiveCost.calibration', () => {
  it("scales estimates by the 95th percentile of the last requests' actual over estimated (16 measured)", () => {
    const cost = new LiveCost();
    const ratios: number[] = [];
    for (let i = 0; i < 21; i++) {
      const charge = cost.extraMs('ttft') ?? 0; // what a newcomer is charged now
      const s = cost.admit(10, 0, 100, false, { ttft: 0, ttfp: 0 }); // each request alone, predicted 100 ms
      expect(s.estimatedMs.ttft).toBeCloseTo(Math.max(0, 100 + charge));
      const ratio = i === 7 ? 30 : 1 + i / 20; // one stall, counted as 10x
      cost.firstToken(s, s.estimatedMs.ttft! * ratio);
      cost.release(s);
      ratios.push(Math.min(10, ratio));
      if (ratios.length < 16) expect(cost.calibration('ttft')).toBe(1);
    }
    const sorted = ratios.sort((a, b) => a - b);
    expect(cost.calibration('ttft')).toBeCloseTo(sorted[Math.ceil(0.95 * sorted.length) - 1]);
    expect(cost.calibration('ttft')).toBeLessThan(10); // the stall is the maximum, beyond the 95th percentile of 21
    expect(cost.calibration('ttfp')).toBe(1); // no first audio measured
    // What admission is told: the prediction plus the charge now, scaled by the calibration; no first audio yet.
    const charge = cost.extraMs('ttft') ?? 0;
    const noWait = { ttft: 0, ttfp: 0 };
    expect(cost.estimate(100, 'ttft', noWait)).toBeCloseTo(Math.max(0, 100 + charge) * cost.calibration('ttft'));
    expect(cost.estimate(100, 'ttfp', noWait)).toBeNull();
  });

  it('keeps the last 64 requests: an old bias is forgotten', () => {
    const cost = new LiveCost();
    const run = (n: number, ratio: number): void => {
      for (let i = 0; i < n; i++) {
        const s = cost.admit(10, 0, 100, true, { ttft: 0, ttfp: 0 });
        cost.firstAudio(s, 0); // the first audio's charge is learned from the first one on
        cost.firstToken(s, (s.estimatedMs.ttft ?? 0) * ratio);
        cost.release(s);
      }
    };
    run(64, 3);
    expect(cost.calibration('ttft')).toBeCloseTo(3);
    run(64, 0.5);
    expect(cost.calibration('ttft')).toBeCloseTo(0.5);
  });
});
