/**
 * The encoder-output store end to end: real stage processes (an image encoder, two Thinker replicas), real models,
 * a real redis-server. The same image in requests routed to different Thinker instances is encoded once: the later
 * requests' bytes never reach the encoder (main's media-send events, the media-bytes metric's), their rows come
 * from Redis or the instance's own copy, and the answers are identical. An entry evicted under the byte budget is
 * encoded again, transparently (same answer). Shutdown leaves no key of the store's prefix in Redis. With tracing on
 * (OTLP to a receiver the test starts), each request's Thinker span holds its image's lookup: miss, Redis or local.
 */
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { imageEmbeddingCount } from '../../src/media/imagePatches.ts';
import { bytesKeyOf } from '../../src/media/mediaKey.ts';
import { thinkerStatsOf, type ThinkerEcStats } from '../../stages/thinker/protocol.ts';
import { collect, ownSegments, waitFor } from '../helpers/engine.ts';
import { pngBytes } from '../helpers/media.ts';
import { OtlpReceiver } from '../helpers/otlpReceiver.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const HIDDEN = 256; // the tiny Thinker's hidden size: one row of an image is 256 float32
const rowsBytes = (w: number, h: number) => imageEmbeddingCount(w, h) * HIDDEN * 4;
const W = 224;
const H = 160;
const KEY_PREFIX = `ectest${process.pid}`;

const yaml = (redisUrl: string | null, budgetBytes: number, thinkers = 2, routing = 'least_loaded') => `
routing: ${routing}
ec_store:
  url: ${redisUrl === null ? 'null' : `"${redisUrl}"`}
  ${redisUrl === null ? '' : `key_prefix: ${KEY_PREFIX}`}
  budget_bytes: ${budgetBytes}
  ttl_seconds: 600
stages:
  - stage_id: image-encoder
    kind: encoder
    engine: {threads: 1}
    # No cache of its own worth the name: every item that reaches it is a real encoder run.
    encoder: {modality: image, cache_bytes: 1}
  - stage_id: thinker
    kind: thinker
    # No prefix cache: it names an image's positions by the image's key, so a repeat prompt adopts the KV of a
    # prompt computed before and is answered without waiting for its rows. A re-encode after an eviction then lost
    # the race (under load the encode was cancelled with the answered request; at best its rows came too late to be
    # kept) and the store never got the image back. These tests are about the store's rows, not the KV.
    engine: {threads: 1, prefix_cache: false}
    inputs: [{from: image-encoder}]
    final_output: true
    final_output_type: text
    replicas: ${thinkers}
`;

const ask = (image: Uint8Array, maxTokens = 12): GenerateRequest => ({
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image', data: image },
      ],
    },
  ],
  modalities: ['text'],
  sampling: { maxTokens, ignoreEos: true, seed: 3 },
});

const bytesKeyOfImage = (data: Uint8Array) =>
  bytesKeyOf({ kind: 'media', item: 0, format: 'image', what: 'image', bytes: data });

/** Latest stats per instance (chorus:stage:stats), and every EC lookup and media send main made. */
const thinkerEc = new Map<string, ThinkerEcStats>();
const lookups: string[] = [];
const mediaSent: { stage: string; bytes: number }[] = [];
const onStats = (m: unknown) => {
  const s = m as { instance: string; kind?: unknown };
  const { ec } = thinkerStatsOf(s);
  if (ec) thinkerEc.set(s.instance, ec);
};
const onLookup = (m: unknown) => lookups.push((m as { where: string }).where);
const onMedia = (m: unknown) => mediaSent.push(m as { stage: string; bytes: number });

/** Starts (with fresh records) or stops recording the engine's events. */
function watch(on: boolean): void {
  const channels = { 'chorus:stage:stats': onStats, 'chorus:ec:lookup': onLookup, 'chorus:encoder:media': onMedia };
  for (const [name, fn] of Object.entries(channels)) (on ? subscribe : unsubscribe)(name, fn);
  if (!on) return;
  lookups.length = 0;
  mediaSent.length = 0;
  thinkerEc.clear();
}

/** Waits for an asynchronous condition (a Redis query), checking it every 20 ms. */
async function until(what: string, cond: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The request in a new sampled trace of its own (as main's root span would send it); returns its trace id too. */
function traced(request: GenerateRequest): { request: GenerateRequest; traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { request: { ...request, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` }, traceId };
}

describe('EC store over Redis, two Thinker replicas', () => {
  let redis: RedisServer;
  let engine: Orchestrator | undefined;
  let receiver: OtlpReceiver;
  const img1 = pngBytes(W, H, 11);
  const img2 = pngBytes(W, H, 12);
  // Room for one image's rows, not two: storing the second evicts the first (least recently used).
  const budgetBytes = Math.floor(rowsBytes(W, H) * 1.5);
  let first: string;

  const ecKeys = async () => (await redis.keys()).filter((k) => k.startsWith(`${KEY_PREFIX}:ec:`));

  beforeAll(async () => {
    watch(true);
    redis = await RedisServer.start();
    receiver = await OtlpReceiver.start();
    // The stage processes read OTEL_* when they start (a restarted one, later, without them: it is not traced).
    const saved = { endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, delay: process.env.OTEL_BSP_SCHEDULE_DELAY };
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50'; // ms: export soon after a span ends, not every 5 s
    try {
      engine = await Orchestrator.start(parseConfig(yaml(redis.url, budgetBytes), `${process.cwd()}/configs/ec.yaml`));
    } finally {
      for (const [key, value] of [
        ['OTEL_EXPORTER_OTLP_ENDPOINT', saved.endpoint],
        ['OTEL_BSP_SCHEDULE_DELAY', saved.delay],
      ] as const)
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
    }
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
    await receiver?.close();
    await redis?.stop();
    watch(false);
    expect(ownSegments()).toEqual([]);
  });

  it('encodes an image once for requests on both Thinker instances; the second gets its rows from Redis', async () => {
    const e = engine!;
    const traces = [traced(ask(img1)), traced(ask(img1)), traced(ask(img1))];
    const a = await collect(e.generate(traces[0].request));
    expect(a.done.finishReason).toBe('length');
    first = a.text;
    await waitFor('the rows of image 1 in the store', () => e.ecStore!.stats.entries === 1);
    expect(await ecKeys()).toHaveLength(1);
    expect(lookups).toEqual(['miss']);
    expect(mediaSent).toEqual([{ stage: 'image-encoder', bytes: img1.byteLength }]);

    // Least-loaded routing counts a request on an instance until the instance reports it finished, which may come
    // after the client's answer: wait for it, or the busy answer below goes to thinker#1 and the next to thinker#0.
    await waitFor('both Thinkers let go of the first request', () => e.health().every((s) => s.inFlight === 0));
    // A long text answer keeps thinker#0 (which served the first request) busy, so the next goes to thinker#1.
    const busy = e.generate({
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
      modalities: ['text'],
      sampling: { maxTokens: 400, ignoreEos: true, seed: 1 },
    });
    const busyDone = collect(busy);
    const b = await collect(e.generate(traces[1].request));
    expect(b.text).toBe(first);
    expect(lookups).toEqual(['miss', 'remote']);
    expect(mediaSent).toHaveLength(1); // the second request's bytes went to no encoder
    await waitFor('thinker#1 took rows from Redis', () => thinkerEc.get('thinker#1')?.remoteTakes === 1);
    await busyDone;

    // Both instances hold a copy now (thinker#1 kept what it took from Redis): wherever it goes, it is local.
    await waitFor(
      'thinker#1 holds a copy',
      () => e.ecStore!.where(bytesKeyOfImage(img1), 'image-encoder')?.localTo.size === 2,
    );
    const c = await collect(e.generate(traces[2].request));
    expect(c.text).toBe(first);
    expect(lookups).toEqual(['miss', 'remote', 'local']);
    const localTakes = () => [...thinkerEc.values()].reduce((n, s) => n + s.localTakes, 0);
    await waitFor('a Thinker took its own copy', () => localTakes() === 1);
    // The encoder saw the bytes once (main's own send events, not the encoder's counters, which a restarted encoder
    // counts anew) and the store holds the one entry its run made.
    expect(mediaSent).toHaveLength(1);
    expect(e.ecStore!.stats).toMatchObject({ entries: 1, evictions: 0, refused: 0 });

    // Each request's trace: its Thinker span holds the image's lookup, a miss, then rows from Redis, then its own copy.
    const lookupIn = (traceId: string) => receiver.spans.find((s) => s.traceId === traceId && s.name === 'ec lookup');
    await receiver.until('the three lookups', () => traces.every((t) => lookupIn(t.traceId)));
    const results = traces.map((t) => lookupIn(t.traceId)!);
    expect(results.map((l) => l.attributes)).toEqual([
      { 'chorus.ec.item': 0, 'chorus.ec.result': 'miss', 'chorus.bytes': 0 },
      { 'chorus.ec.item': 0, 'chorus.ec.result': 'redis', 'chorus.bytes': rowsBytes(W, H) },
      { 'chorus.ec.item': 0, 'chorus.ec.result': 'local', 'chorus.bytes': rowsBytes(W, H) },
    ]);
    for (const lookup of results) {
      const parent = receiver.spans.find((s) => s.spanId === lookup.parentSpanId);
      expect(parent).toMatchObject({ name: 'stage thinker', traceId: lookup.traceId, pid: lookup.pid });
      expect(lookup.startNs).toBeGreaterThanOrEqual(parent!.startNs);
      expect(lookup.endNs).toBeLessThanOrEqual(parent!.endNs);
    }
  });

  it('an entry evicted under the byte budget is encoded again, with the same answer', async () => {
    const e = engine!;
    const other = await collect(e.generate(ask(img2)));
    expect(other.done.finishReason).toBe('length');
    // Image 2's rows took the room of image 1's (unpinned, least recently used): evicted, its Redis key deleted.
    await waitFor('image 2 stored, image 1 evicted', () => e.ecStore!.stats.evictions === 1);
    expect(e.ecStore!.stats).toMatchObject({ entries: 1, refused: 0 });
    expect(e.ecStore!.stats.bytes).toBeLessThanOrEqual(budgetBytes);
    await until('one key in Redis', async () => (await ecKeys()).length === 1);

    const again = await collect(e.generate(ask(img1)));
    expect(again.text).toBe(first);
    expect(lookups.slice(-2)).toEqual(['miss', 'miss']);
    expect(mediaSent.map((m) => m.bytes)).toEqual([img1.byteLength, img2.byteLength, img1.byteLength]);
    // Its rows back in the store: after a miss they can only have come from the encoder (the Thinker was told of no
    // entry to take). The store's own entry, not the encoder's run counter, which a restarted encoder counts anew.
    await waitFor('image 1 stored again', () => e.ecStore!.where(bytesKeyOfImage(img1), 'image-encoder') !== null);
    expect(e.ecStore!.stats).toMatchObject({ entries: 1, evictions: 2, refused: 0 });
    expect(e.ecStore!.stats.bytes).toBeLessThanOrEqual(budgetBytes);
  });

  it('a Thinker killed mid-answer of an image request: replayed with the store`s rows, identical', async () => {
    const e = engine!;
    await waitFor('image 1 in the store', () => e.ecStore!.where(bytesKeyOfImage(img1), 'image-encoder') !== null);
    const reference = await collect(e.generate(ask(img1, 400)));
    const sentBefore = mediaSent.length;
    const migrations: { stageId: string; outcome: string }[] = [];
    const onMigrated = (m: unknown) => migrations.push(m as { stageId: string; outcome: string });
    subscribe('chorus:request:migrated', onMigrated);
    // The Thinker the router gave this request (not any Thinker with a request in flight: the other one may still
    // be finishing the reference answer's bookkeeping).
    const routedTo: string[] = [];
    const onRouted = (m: unknown) => routedTo.push((m as { instance: string }).instance);
    subscribe(channelNames.routeDecision, onRouted);
    let killed: number | null = null;
    const r = await collect(e.generate(ask(img1, 400)), (ev) => {
      if (ev.type !== 'text' || killed !== null) return;
      expect(routedTo).toHaveLength(1);
      killed = e.workerOf(routedTo[0])!.pid!;
      process.kill(killed, 'SIGKILL');
    }).finally(() => {
      unsubscribe('chorus:request:migrated', onMigrated);
      unsubscribe(channelNames.routeDecision, onRouted);
    });
    expect(killed).not.toBeNull();
    expect(migrations).toEqual([expect.objectContaining({ stageId: 'thinker', outcome: 'migrated' })]);
    // engine.migration (on by default): the replay reads the image's rows from the store, no encoder runs again.
    expect(r.done.error).toBeUndefined();
    expect(r.done.finishReason).toBe('length');
    expect(r.text).toBe(reference.text);
    expect(mediaSent.length).toBe(sentBefore);
    await waitFor('the Thinker back', () => e.health().every((h) => h.status === 'ready'), 60_000);
  });

  it('leaves no key of its prefix in Redis after shutdown', async () => {
    expect((await ecKeys()).length).toBeGreaterThan(0);
    await engine!.close();
    engine = undefined;
    expect(await ecKeys()).toEqual([]);
  });
});

describe('EC store without Redis (in-process copies, indexed by main)', () => {
  let engine: Orchestrator | undefined;
  const img = pngBytes(W, H, 21);

  beforeAll(async () => {
    watch(true);
    engine = await Orchestrator.start(parseConfig(yaml(null, 1 << 20, 1), `${process.cwd()}/configs/ec.yaml`));
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
    watch(false);
    expect(ownSegments()).toEqual([]);
  });

  it("serves a repeat from the Thinker's own copy; a restarted Thinker lost it, so it is encoded again", async () => {
    const e = engine!;
    const a = await collect(e.generate(ask(img)));
    await waitFor('the copy indexed', () => e.ecStore!.stats.entries === 1);
    const b = await collect(e.generate(ask(img)));
    expect(b.text).toBe(a.text);
    expect(lookups).toEqual(['miss', 'local']);
    expect(mediaSent).toHaveLength(1);

    // The Thinker process dies: its copies die with it, and main forgets them (no Redis to fall back on).
    const old = e.workerOf('thinker#0')!;
    process.kill(old.pid!, 'SIGKILL');
    await waitFor('main forgot the copy', () => e.ecStore!.stats.entries === 0);
    await waitFor(
      'thinker#0 restarted',
      () => e.workerOf('thinker#0') !== null && e.workerOf('thinker#0') !== old,
      60_000,
    );
    await waitFor('thinker#0 ready', () => e.health().every((h) => h.status === 'ready'), 60_000);
    const c = await collect(e.generate(ask(img)));
    expect(c.text).toBe(a.text);
    expect(lookups).toEqual(['miss', 'local', 'miss']);
    expect(mediaSent).toHaveLength(2); // the bytes went to the encoder again
    await waitFor('the copy indexed again', () => e.ecStore!.stats.entries === 1);
  });
});

describe('TTFT routing with the store (in-process copies, two Thinker replicas)', () => {
  let engine: Orchestrator | undefined;
  const img = pngBytes(W, H, 31);
  const reasons: string[] = [];
  const onDecision = (m: unknown) => reasons.push((m as { reason: string }).reason);

  beforeAll(async () => {
    watch(true);
    subscribe('chorus:route:decision', onDecision);
    engine = await Orchestrator.start(parseConfig(yaml(null, 1 << 20, 2, 'ttft'), `${process.cwd()}/configs/ec.yaml`));
  }, 240_000);

  afterAll(async () => {
    await engine?.close();
    unsubscribe('chorus:route:decision', onDecision);
    watch(false);
    expect(ownSegments()).toEqual([]);
  });

  it('sends a repeat to the Thinker holding its rows (ec_local), which reaches no encoder', async () => {
    const e = engine!;
    const a = await collect(e.generate(ask(img)));
    await waitFor('the copy indexed', () => e.ecStore!.stats.entries === 1);
    const holders = e.ecStore!.where(bytesKeyOfImage(img), 'image-encoder')!.localTo;
    expect(holders.size).toBe(1);
    const b = await collect(e.generate(ask(img)));
    expect(b.text).toBe(a.text);
    // Without Redis only the holder can hit: a local lookup means the router chose it, and said why.
    expect(lookups).toEqual(['miss', 'local']);
    expect(reasons.at(-1)).toBe('ec_local');
    expect(mediaSent).toHaveLength(1);
  });
});
