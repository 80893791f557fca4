/**
 * The Router's bookkeeping over real stage specs (configs/epd.yaml) and slots, with no processes: what it counts as
 * queued on each instance, what it learns when first tokens and encoder `finished` reports come back, and the three
 * policies. (The choice itself: test/unit/chooseRoute.test.ts.)
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { RoutingPolicy, StageGraph } from '../../src/common/graph.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { Router, type RouteTicket } from '../../src/engine/routing/Router.ts';
import { MIN_RATE_SAMPLE_POSITIONS } from '../../src/engine/routing/RoutedRequest.ts';
import { newInstance as newSlot, type StageInstance as Slot } from '../../src/engine/pool/StageInstance.ts';
import type { StageStats } from '../../src/worker/messages.ts';
import { ROUTING_NAME_CHARS, tokenBlockNames } from '../../src/sched/blockNames.ts';

let graph: StageGraph;
beforeAll(async () => {
  graph = await loadConfig(join(import.meta.dirname, '..', '..', 'configs', 'epd.yaml'));
});

function slotsOf(instances: Record<string, string[]>): Map<string, Slot> {
  const slots = new Map<string, Slot>();
  for (const [stageId, names] of Object.entries(instances)) {
    const index = graph.stages.findIndex((s) => s.stageId === stageId);
    names.forEach((name, replica) => {
      const slot = newSlot(graph, index, replica, `${stageId}#${name}`);
      slot.status = 'ready';
      slots.set(slot.instance, slot);
    });
  }
  return slots;
}

const thinkers = { thinker: ['0', '1'], 'audio-encoder': ['a', 'b'] };

const PREFIX = { retained: 1, retainedBytes: 0, reuses: 0, reusedTokens: 0, missedTokens: 0, evictions: 0 };
const STATS: StageStats = { queueDepth: 0, running: 0, batchSize: 0, stepMs: 0, batchSizes: [], edgeSamples: [] };

function textPrompt(tokens: number): PreparedPrompt {
  return { promptTokenIds: new Array<number>(tokens).fill(1), items: [], spans: [] };
}

function audioPrompt(tokens: number, rows: number): PreparedPrompt {
  const encoder = graph.stages.find((s) => s.stageId === 'audio-encoder')!;
  const part = { type: 'audio' as const, data: new Uint8Array(0), format: 'wav' as const };
  const item = { index: 0, modality: 'audio' as const, part, what: 'clip', numEmbeddings: rows, encoder };
  return { promptTokenIds: new Array<number>(tokens).fill(1), items: [item], spans: [] };
}

/** Each routed request's ticket (its record keeps it in the Orchestrator), by request id. */
const tickets = new Map<string, RouteTicket>();
const firstToken = (id: string, atMs: number) => tickets.get(id)!.firstToken(atMs);
const encoderFinished = (instance: string, id: string, atMs: number) =>
  tickets.get(id)!.encoderFinished(instance, atMs);
const forget = (id: string) => tickets.get(id)!.release();

/** A clip of `rows` rows (or an image, `modality: 'image'`) for the image encoder, which serves video too. */
function visionPrompt(tokens: number, rows: number, modality: 'image' | 'video' = 'video'): PreparedPrompt {
  const encoder = graph.stages.find((s) => s.stageId === 'image-encoder')!;
  const part = { type: 'image' as const, data: new Uint8Array(0) };
  const item = { index: 0, modality, part, what: 'clip', numEmbeddings: rows, encoder };
  return { promptTokenIds: new Array<number>(tokens).fill(1), items: [item], spans: [] } as unknown as PreparedPrompt;
}

function route(router: Router, id: string, prompt: PreparedPrompt): Map<string, string> {
  const encoders = new Set(prompt.items.map((i) => i.encoder.stageId));
  const stages = graph.stages.filter((s) => s.stageId === 'thinker' || encoders.has(s.stageId));
  const { chosen, book } = router.route(id, 'thinker', stages, prompt, (_spec, pick) => pick());
  const ticket = book(); // as the engine does once the request's adds are sent
  if (ticket) tickets.set(id, ticket);
  return new Map([...chosen].map(([stageId, slot]) => [stageId, slot.instance]));
}

const subscriptions: [string, (m: unknown) => void][] = [];
function listen(name: string): unknown[] {
  const got: unknown[] = [];
  const on = (m: unknown) => got.push(m);
  subscribe(name, on);
  subscriptions.push([name, on]);
  return got;
}
afterEach(() => {
  tickets.clear();
  for (const [name, on] of subscriptions.splice(0)) unsubscribe(name, on);
});

describe('Router', () => {
  it('ttft: a prompt waiting for its first token counts as queue; the first token frees it and is checked', () => {
    const router = new Router('ttft', slotsOf(thinkers));
    const checks = listen(channelNames.routeTtft);
    const decisions = listen(channelNames.routeDecision);
    expect(route(router, 'r1', textPrompt(2000)).get('thinker')).toBe('thinker#0');
    // r1's 2000 tokens are queued on thinker#0: the next one goes to thinker#1, and the one after to thinker#1 too
    // (100 queued there is less than 2000).
    expect(route(router, 'r2', textPrompt(100)).get('thinker')).toBe('thinker#1');
    expect(route(router, 'r3', textPrompt(100)).get('thinker')).toBe('thinker#1');
    firstToken('r1', Date.now() + 400);
    firstToken('r2', Date.now() + 50);
    firstToken('r3', Date.now() + 50);
    // Nothing queued now; thinker#0 measured ~5000 tokens/s (2000 in 0.4 s), thinker#1 less (r3: 200 positions, its
    // own and r2's ahead of it, in 50 ms; r2's 100 alone too few to teach a rate): the faster one.
    expect(route(router, 'r4', textPrompt(100)).get('thinker')).toBe('thinker#0');
    expect(checks).toHaveLength(3);
    expect(checks[0]).toMatchObject({ requestId: 'r1', modality: 'text' });
    expect((checks[0] as { actualSeconds: number }).actualSeconds).toBeGreaterThanOrEqual(0.4);
    expect(decisions.map((d) => (d as { policy: string }).policy)).toEqual(['ttft', 'ttft', 'ttft', 'ttft']);
    expect((decisions[1] as { reason: string }).reason).toBe('unmeasured');
  });

  it('a choice counts in no queue and decides nothing until it is booked, and is booked once', () => {
    const router = new Router('ttft', slotsOf(thinkers));
    const decisions = listen(channelNames.routeDecision);
    const stages = graph.stages.filter((s) => s.stageId === 'thinker');
    const unbooked = router.route('u1', 'thinker', stages, textPrompt(2000), (_spec, pick) => pick());
    expect(unbooked.chosen.get('thinker')!.instance).toBe('thinker#0');
    // Not booked (its adds were refused): its 2000 tokens are on no queue, so the next one goes to thinker#0 too.
    expect(decisions).toHaveLength(0);
    const next = router.route('u2', 'thinker', stages, textPrompt(2000), (_spec, pick) => pick());
    expect(next.chosen.get('thinker')!.instance).toBe('thinker#0');
    expect(next.book()).not.toBeNull();
    expect(decisions).toHaveLength(1);
    expect(() => next.book()).toThrow(/booked already/);
    // Booked, its tokens are queued on thinker#0: the one after it goes to thinker#1.
    expect(route(router, 'u3', textPrompt(100)).get('thinker')).toBe('thinker#1');
  });

  /** A router whose two Thinkers each computed 1000 tokens, thinker#0 in `ms0`, thinker#1 in `ms1`. */
  function taught(ms0: number, ms1: number): Router {
    const router = new Router('ttft', slotsOf(thinkers));
    const now = Date.now();
    route(router, 'a', textPrompt(1000));
    route(router, 'b', textPrompt(1000));
    firstToken('a', now + ms0);
    firstToken('b', now + ms1);
    return router;
  }

  it('ttft: learns prefill rates from first tokens and prefers the faster Thinker', () => {
    // thinker#0 took 1 s for 1000 tokens, thinker#1 0.1 s for 1000.
    const router = taught(1000, 100);
    for (let i = 0; i < 3; i++) {
      expect(route(router, `c${i}`, textPrompt(1000)).get('thinker')).toBe('thinker#1');
      forget(`c${i}`);
    }
  });

  it('ttft: a short prefill (a turn on a cached history) teaches no rate: its fixed cost is not its positions', () => {
    const router = taught(200, 200); // both compute 1000 positions in 0.2 s
    // Then short turns, each first token 10 ms after its 127 positions (12700 a second, if it taught).
    const rates = () =>
      router
        .snapshot(
          graph.stages,
          () => true,
          () => null,
        )
        .thinkers.map((t) => t.prefillTokensPerSecond);
    const before = rates();
    for (let i = 0; i < 5; i++) {
      const id = `short${i}`;
      expect(route(router, id, textPrompt(MIN_RATE_SAMPLE_POSITIONS - 1)).size).toBe(1);
      firstToken(id, Date.now() + 10);
    }
    expect(rates()).toEqual(before);
    // A prefill of MIN_RATE_SAMPLE_POSITIONS does teach.
    route(router, 'long', textPrompt(MIN_RATE_SAMPLE_POSITIONS));
    firstToken('long', Date.now() + 1000);
    expect(rates()).not.toEqual(before);
  });

  it('ttft: encoder rows queue per instance until its finished report; the clip goes to the idle encoder', () => {
    const router = new Router('ttft', slotsOf(thinkers));
    const first = route(router, 'x', audioPrompt(800, 750));
    const second = route(router, 'y', audioPrompt(800, 750));
    expect(new Set([first.get('audio-encoder'), second.get('audio-encoder')]).size).toBe(2);
    encoderFinished(first.get('audio-encoder')!, 'x', Date.now() + 100);
    forget('y');
    // Only x's encoder has a measured rate now (and nothing queued): the next clip goes there.
    expect(route(router, 'z', audioPrompt(800, 750)).get('audio-encoder')).toBe(first.get('audio-encoder'));
  });

  it('ttft: a prompt waiting for its encoder is not queue yet; its rows ready, it is', () => {
    const slots = slotsOf(thinkers);
    const router = new Router('ttft', slots);
    const queued = (instance: string) =>
      router
        .snapshot(
          graph.stages,
          () => true,
          () => null,
        )
        .thinkers.find((t) => t.instance === instance)!.queuedPrefillTokens;
    const clip = route(router, 'clip', audioPrompt(4000, 750));
    const [clipThinker, encoder] = [clip.get('thinker')!, clip.get('audio-encoder')!];
    slots.get(clipThinker)!.inFlight.add('clip'); // what the Orchestrator does on admission
    // While it encodes the Thinker holds no step for it: a text request routed now does not wait behind its 4000
    // tokens, so both Thinkers are as good for it and the one with nothing in flight takes it.
    expect(queued(clipThinker)).toBe(0);
    const other = clipThinker === 'thinker#0' ? 'thinker#1' : 'thinker#0';
    expect(route(router, 't1', textPrompt(10)).get('thinker')).toBe(other);
    forget('t1');
    // Its rows are ready: now its prompt is queue on its Thinker, until its first token.
    encoderFinished(encoder, 'clip', Date.now() + 100);
    expect(queued(clipThinker)).toBe(4000);
    firstToken('clip', Date.now() + 200);
    expect(queued(clipThinker)).toBe(0);
  });

  it.each<[RoutingPolicy, string[]]>([
    ['round_robin', ['thinker#0', 'thinker#1', 'thinker#0', 'thinker#1']],
    ['least_loaded', ['thinker#0', 'thinker#1', 'thinker#0', 'thinker#1']],
  ])('%s spreads requests as its name says', (policy, expected) => {
    const slots = slotsOf(thinkers);
    const router = new Router(policy, slots);
    const got = expected.map((_, i) => {
      const instance = route(router, `q${i}`, textPrompt(10)).get('thinker')!;
      slots.get(instance)!.inFlight.add(`q${i}`); // what the Orchestrator does on admission
      return instance;
    });
    expect(got).toEqual(expected);
  });

  it('an EC entry local to a Thinker draws the request there (the store lookup the Orchestrator passes in)', () => {
    const router = new Router('ttft', slotsOf(thinkers), () => ({ localTo: ['thinker#1'], remote: false }));
    const decisions = listen(channelNames.routeDecision);
    expect(route(router, 'e', audioPrompt(800, 750)).get('thinker')).toBe('thinker#1');
    expect(decisions).toEqual([{ policy: 'ttft', reason: 'ec_local', instance: 'thinker#1', cachedPositions: 0 }]);
  });

  it('ttft: a turn goes to the Thinker whose prefix cache holds its history; the queue counts what it computes', () => {
    const slots = slotsOf(thinkers);
    const router = new Router('ttft', slots);
    const decisions = listen(channelNames.routeDecision);
    const history = Array.from({ length: 2000 }, (_, i) => 1 + (i % 300));
    const held = (ids: number[]) => ({
      root: 'thinker model',
      blockPositions: 16,
      names: tokenBlockNames('thinker model', 16, ids, ids.length).map((n) => n.slice(0, ROUTING_NAME_CHARS)),
    });
    const holder = slots.get('thinker#1')!;
    holder.stats = { ...STATS, kind: { prefix: { ...PREFIX, held: held(history) } } }; // the Thinker's section
    holder.inFlight.add('busy'); // busier, but holding 2,000 positions of the prompt
    const turn = { promptTokenIds: [...history, 7, 8, 9], items: [], spans: [] };
    expect(route(router, 'turn', turn).get('thinker')).toBe('thinker#1');
    expect(decisions).toEqual([{ policy: 'ttft', reason: 'kv_overlap', instance: 'thinker#1', cachedPositions: 2000 }]);
    const queued = router.snapshot(
      graph.stages,
      () => true,
      () => null,
    ).thinkers;
    expect(queued.find((t) => t.instance === 'thinker#1')!.queuedPrefillTokens).toBe(2003 - 2000);
    forget('turn');
    // Restarting (its process died: its report with it): the turn goes by load alone.
    holder.status = 'restarting';
    holder.stats = null;
    expect(route(router, 'again', turn).get('thinker')).toBe('thinker#0');
  });

  it('one ready Thinker and no media: chosen at once, its overlap and prediction worked out when booked', () => {
    const slots = slotsOf({ thinker: ['0'] });
    const router = new Router('ttft', slots);
    const decisions = listen(channelNames.routeDecision);
    const history = Array.from({ length: 200 }, (_, i) => 1 + (i % 300));
    const turn = { promptTokenIds: [...history, 7, 8, 9], items: [], spans: [] };
    const stages = graph.stages.filter((s) => s.stageId === 'thinker');
    const routed = router.route('turn', 'thinker', stages, turn, (_spec, pick) => pick());
    expect(routed.chosen.get('thinker')!.instance).toBe('thinker#0');
    expect(routed.held.size).toBe(0);
    // What the booking reads is the instance's cache as known then (here a report that came after the choice).
    slots.get('thinker#0')!.stats = {
      ...STATS,
      kind: {
        prefix: {
          ...PREFIX,
          held: {
            root: 'thinker model',
            blockPositions: 16,
            names: tokenBlockNames('thinker model', 16, history, 200).map((n) => n.slice(0, ROUTING_NAME_CHARS)),
          },
        },
      },
    };
    expect(decisions).toHaveLength(0);
    tickets.set('turn', routed.book()!);
    expect(decisions).toEqual([{ policy: 'ttft', reason: 'single', instance: 'thinker#0', cachedPositions: 192 }]);
    const queued = router.snapshot(
      stages,
      () => true,
      () => null,
    ).thinkers[0].queuedPrefillTokens;
    expect(queued).toBe(203 - 192);
    // A retained prefix decides it without a pick; the other policies name themselves.
    const kept = router.route('kept', 'thinker', stages, textPrompt(10), (_spec) => slots.get('thinker#0')!);
    kept.book();
    expect(decisions[1]).toMatchObject({ reason: 'pinned', instance: 'thinker#0', cachedPositions: 0 });
    const least = new Router('least_loaded', slots);
    least.route('l', 'thinker', stages, turn, (_spec, pick) => pick()).book();
    expect(decisions[2]).toMatchObject({ policy: 'least_loaded', reason: 'least_loaded', cachedPositions: 0 });
  });

  it('ttft: an instance READY again (restarted, or a remote that rejoined) counts on nothing until it reports', () => {
    const slots = slotsOf(thinkers);
    const router = new Router('ttft', slots);
    const decisions = listen(channelNames.routeDecision);
    const history = Array.from({ length: 320 }, (_, i) => 1 + (i % 50));
    const names = tokenBlockNames('thinker model', 16, history, history.length);
    const held = { root: 'thinker model', blockPositions: 16, names: names.map((n) => n.slice(0, ROUTING_NAME_CHARS)) };
    const holder = slots.get('thinker#1')!;
    holder.stats = { ...STATS, kind: { prefix: { ...PREFIX, held } } };
    const turn = { promptTokenIds: [...history, 7], items: [], spans: [] };
    route(router, 'before', turn);
    forget('before');
    expect(decisions.at(-1)).toMatchObject({ instance: 'thinker#1', reason: 'kv_overlap', cachedPositions: 320 });
    // Died and came back between two requests (no request saw it restarting): its new process has not reported.
    holder.stats = null;
    router.forget('thinker#1');
    route(router, 'after', turn);
    expect(decisions.at(-1)).toMatchObject({ cachedPositions: 0 });
    expect(decisions.at(-1)).not.toMatchObject({ reason: 'kv_overlap' });
  });

  it('ttft: reports indexed as they arrive route as the reports read at the route; a newer one always replaces', () => {
    const slots = slotsOf(thinkers);
    const router = new Router('ttft', slots, undefined, 0); // no predictions: the reports alone say what is held
    const decisions = listen(channelNames.routeDecision);
    const history = Array.from({ length: 320 }, (_, i) => 1 + (i % 50));
    const names = tokenBlockNames('thinker model', 16, history, history.length).map((n) =>
      n.slice(0, ROUTING_NAME_CHARS),
    );
    const report = (blocks: number) => ({
      ...STATS,
      kind: {
        prefix: { ...PREFIX, held: { root: 'thinker model', blockPositions: 16, names: names.slice(0, blocks) } },
      },
    });
    const holder = slots.get('thinker#1')!;
    const turn = { promptTokenIds: [...history, 7], items: [], spans: [] };
    const cachedAfter = (id: string) => {
      route(router, id, turn);
      forget(id);
      return (decisions.at(-1) as { cachedPositions: number }).cachedPositions;
    };
    holder.stats = report(20);
    router.reported(holder); // as the pool's 'stats' event does
    expect(cachedAfter('whole')).toBe(320);
    expect(cachedAfter('again')).toBe(320); // the same report, read again
    holder.stats = report(5); // blocks evicted, reported
    router.reported(holder);
    expect(cachedAfter('evicted')).toBe(80);
    holder.stats = report(10); // a report whose event has not been handled yet: the route reads it
    expect(cachedAfter('unannounced')).toBe(160);
    holder.status = 'starting'; // not ready: its report is not indexed, and routing leaves it out
    holder.stats = report(20);
    router.reported(holder);
    expect(route(router, 'elsewhere', turn).get('thinker')).toBe('thinker#0');
    forget('elsewhere');
  });

  it.each<RoutingPolicy>(['ttft', 'least_loaded'])(
    '%s: a burst under one long prefix is queued as the prefix once and each suffix; distinct prompts whole',
    (policy) => {
      const slots = slotsOf({ thinker: ['0'] });
      const router = new Router(policy, slots, undefined, 0); // no predictions: the queue alone shares the prefix
      const thinker = graph.stages.find((s) => s.stageId === 'thinker')!;
      const queued = () =>
        router.snapshot(
          [thinker],
          () => true,
          () => null,
        ).thinkers[0].queuedPrefillTokens;
      // 1,024 positions of system prompt (64 blocks of 16) and 40 of each request's own.
      const prefix = Array.from({ length: 1024 }, (_, i) => 1 + (i % 300));
      const ask = (n: number, head: number[]) => ({
        promptTokenIds: [...head, ...Array.from({ length: 40 }, (_, i) => 500 + n * 40 + i)],
        items: [],
        spans: [],
      });
      const burst = [0, 1, 2, 3].map((n) => `b${n}`);
      burst.forEach((id, n) => route(router, id, ask(n, prefix)));
      // The first computes the prefix; the three others copy its blocks as it computes them.
      expect(queued()).toBe(1064 + 3 * 40);
      // The admission estimate waits for that, not for 4 x 1,064 (the default rate: 4,000 positions a second).
      expect(router.estimate(thinker)!.queueMs).toBeCloseTo(((1064 + 3 * 40) / 4000) * 1000, 3);
      // Four distinct prompts of the same size, queued behind them: each computes its whole prompt.
      const distinct = [0, 1, 2, 3].map((n) => `d${n}`);
      distinct.forEach((id, n) =>
        route(
          router,
          id,
          ask(
            n,
            prefix.map((t) => t + 1000 * (n + 1)),
          ),
        ),
      );
      expect(queued()).toBe(1064 + 3 * 40 + 4 * 1064);
      // Each charge leaves at its first token or when cancelled, the names with it: nothing is left queued, and the
      // next request under the prefix computes it again (its cache reports nothing; no request ahead computes it).
      firstToken('b0', Date.now());
      expect(queued()).toBe(3 * 40 + 4 * 1064);
      for (const id of [...burst.slice(1, 3), ...distinct]) firstToken(id, Date.now());
      forget('b3');
      expect(queued()).toBe(0);
      route(router, 'after', ask(9, prefix));
      expect(queued()).toBe(1064);
    },
  );

  it("ttft: learns each encoder instance's video rate apart from its image rate, and avoids the slower one", () => {
    const router = new Router('ttft', slotsOf({ thinker: ['0'], 'image-encoder': ['a', 'b'] }));
    const rates = () =>
      new Map(
        router
          .snapshot(
            graph.stages,
            () => true,
            () => null,
          )
          .encoders.map((e) => [e.instance, e.secondsPerRowOf]),
      );
    // Two clips at once go to the two instances (the second instance is idle); a finishes its 720 rows in 0.72 s,
    // b in 2.88 s.
    const t0 = Date.now();
    const first = route(router, 'v1', visionPrompt(100, 720)).get('image-encoder')!;
    const second = route(router, 'v2', visionPrompt(100, 720)).get('image-encoder')!;
    expect(new Set([first, second]).size).toBe(2);
    encoderFinished(first, 'v1', t0 + 720);
    encoderFinished(second, 'v2', t0 + 2880);
    forget('v1');
    forget('v2');
    const learned = rates();
    expect(learned.get(first)!.video).toBeCloseTo(0.001, 3);
    expect(learned.get(second)!.video).toBeCloseTo(0.004, 3);
    expect(learned.get(first)!.image).toBeUndefined(); // no image measured: a video is not an image sample
    // The next clip goes to the instance measured faster at video.
    expect(route(router, 'v3', visionPrompt(100, 720)).get('image-encoder')).toBe(first);
  });

  it("ttft: a remote instance is on the host its heartbeats name; main's own are on main's", () => {
    const slots = slotsOf({ thinker: ['0'], 'image-encoder': ['a', 'b'] });
    (slots.get('image-encoder#b') as { remote: unknown }).remote = { host: 'gpu-box-7' };
    const router = new Router('ttft', slots);
    const hosts = router
      .snapshot(
        graph.stages,
        () => true,
        () => null,
      )
      .encoders.map((e) => [e.instance, e.host]);
    expect(hosts).toEqual([
      ['image-encoder#a', hostname()],
      ['image-encoder#b', 'gpu-box-7'],
    ]);
  });
});
