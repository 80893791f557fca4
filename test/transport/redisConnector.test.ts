/**
 * The redis connector against a real redis-server (one per describe block, a 3-node Cluster for the last): frames
 * byte for byte, consume-once, TTL garbage collection, cleanup, deadlines, backpressure by credit acks, a full Redis,
 * a wrong password, an outage and the way back, and requests spread over Cluster shards. Every test leaves no key.
 *
 * Frames sent to an instance that has a connector open are popped at once (its bell rings, it LPOPs), whether or not
 * a get() waits. To keep frames in Redis a test sends them to GHOST, an instance nobody opened yet; a connector opened
 * as GHOST later takes them only when the next bell for their list rings (the next put of that request to it).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RedisConnector, type RedisConnectorOptions } from '../../transport/redis/RedisConnector.ts';
import { codeOf } from '../helpers/errors.ts';
import {
  CONNECTOR_BASE as BASE,
  code2wavKey as key,
  later,
  RedisCluster,
  RedisServer,
} from '../helpers/redisServer.ts';

const TALKER = 'talker#0';
const THINKER = 'thinker#0';
const CODE2WAV = 'code2wav#0';
/** An instance nobody has opened: what is sent to it stays in Redis. */
const GHOST = 'code2wav#9';

const listOf = (requestId: string, to: string) => `chorus:{${requestId}}:in:${to}`;

/** `size` bytes that differ with `seed` and along the frame (a byte swapped or lost shows). */
function bytes(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (seed * 31 + i * 7 + (i >> 8)) & 0xff;
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** Byte equality without a megabyte-long diff on failure. */
function expectSameBytes(got: Uint8Array, want: Uint8Array): void {
  expect(got.byteLength).toBe(want.byteLength);
  expect(Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(want)).toBe(true);
}

/**
 * A connector closed when the test ends, whatever happened in it. A test opens its connectors together: each starts an
 * I/O thread that loads tsx and node-redis, seconds under load, and four opened in turn took about twice as long as
 * four at once (10-14 s against 4.5-5.8 s at load 8-13); in turn, the first tests passed vitest's 60 s at load ~25.
 */
async function open(url: string, self: string, overrides: Partial<RedisConnectorOptions> = {}) {
  const connector = await RedisConnector.open(self, { ...BASE, url, ...overrides });
  onTestFinished(() => connector.close());
  return connector;
}

/**
 * Connectors with the base options, opened together before a describe block's tests and closed after them (before its
 * server stops: after-all hooks run last-registered first), for the tests that need no other options, no late start
 * and no close of their own: each open boots an I/O thread, about a second of CPU under load, and a third of this
 * file's opens were the same instances with the same options again. The tests use distinct request ids, so what one
 * leaves in flight (an ack still on its way) touches no other's edge or keys.
 */
function sharedConnectors(url: () => string, selves: readonly string[]): Record<string, RedisConnector> {
  const shared: Record<string, RedisConnector> = {};
  beforeAll(async () => {
    await Promise.all(
      selves.map(async (self) => (shared[self] = await RedisConnector.open(self, { ...BASE, url: url() }))),
    );
  });
  afterAll(async () => {
    await Promise.all(Object.values(shared).map((c) => c.close()));
  });
  return shared;
}

async function rejection(p: Promise<unknown>): Promise<{ code: unknown; message: string }> {
  try {
    await p;
  } catch (err) {
    return { code: (err as { code?: unknown }).code, message: (err as Error).message };
  }
  throw new Error('expected a rejection');
}

/** After each test: no key left; flushed anyway so one failure does not fail the next test too. */
function expectNoKeysAfterEach(server: () => RedisServer): void {
  afterEach(async () => {
    const left = await server().keys();
    if (left.length > 0) await server().cli('flushall');
    expect(left).toEqual([]);
  });
}

describe('redis connector on one redis-server', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());
  const shared = sharedConnectors(() => server.url, [TALKER, THINKER, CODE2WAV, 'code2wav#1']);
  expectNoKeysAfterEach(() => server);

  it('round-trips multi-part frames byte for byte, with the get before or after the put', async () => {
    const [producer, consumer] = [shared[TALKER], shared[CODE2WAV]];
    const parts = [bytes(7, 1), new Uint8Array(0), bytes(300 * 1024, 2), bytes(1, 3)];
    const early = consumer.get(TALKER, CODE2WAV, key('resp_1', 0), later());
    await producer.put(TALKER, CODE2WAV, key('resp_1', 0), parts, later());
    await producer.put(TALKER, CODE2WAV, key('resp_1', 1), bytes(4096, 4), later());
    expectSameBytes(await early, concat(parts));
    expectSameBytes(await consumer.get(TALKER, CODE2WAV, key('resp_1', 1), later()), bytes(4096, 4));
    await expect.poll(() => producer.inflightBytes(TALKER, CODE2WAV)).toBe(0);
  });

  it('keeps requests and edges apart: interleaved puts, gets in reverse order', async () => {
    const [talker, thinker, code2wav0, code2wav1] = [TALKER, THINKER, CODE2WAV, 'code2wav#1'].map(
      (self) => shared[self],
    );
    // The same key on different edges carries different bytes: a frame must come out of its own edge only.
    const sends: { producer: RedisConnector; from: string; to: string; consumer: RedisConnector; k: string }[] = [];
    for (let seq = 0; seq < 4; seq++) {
      for (const requestId of ['a', 'b_2', 'c']) {
        sends.push({ producer: talker, from: TALKER, to: CODE2WAV, consumer: code2wav0, k: key(requestId, seq) });
        sends.push({ producer: thinker, from: THINKER, to: CODE2WAV, consumer: code2wav0, k: key(requestId, seq) });
        sends.push({ producer: talker, from: TALKER, to: 'code2wav#1', consumer: code2wav1, k: key(requestId, seq) });
      }
    }
    await Promise.all(sends.map((s, i) => s.producer.put(s.from, s.to, s.k, bytes(64 + i, i), later())));
    for (let i = sends.length - 1; i >= 0; i--) {
      const s = sends[i];
      expectSameBytes(await s.consumer.get(s.from, s.to, s.k, later()), bytes(64 + i, i));
    }
  });

  it('consumes once: a got frame leaves nothing in Redis and is not handed out twice', async () => {
    const [producer, consumer] = [shared[TALKER], shared[CODE2WAV]];
    await producer.put(TALKER, CODE2WAV, key('once', 0), bytes(4096, 9), later());
    expectSameBytes(await consumer.get(TALKER, CODE2WAV, key('once', 0), later()), bytes(4096, 9));
    expect(await server.keys()).toEqual([]);
    expect(await codeOf(consumer.get(TALKER, CODE2WAV, key('once', 0), Date.now() + 100))).toBe(
      'CHORUS_ERR_CHUNK_TIMEOUT',
    );
  });

  it('lets Redis expire a frame nobody takes after ttl_seconds; the producer cleanup returns its credit', async () => {
    const producer = await open(server.url, TALKER, { ttlSeconds: 1 });
    await producer.put(TALKER, GHOST, key('lost', 0), bytes(1000, 1), later());
    expect(await server.keys()).toEqual([listOf('lost', GHOST)]);
    const pttlMs = Number(await server.cli('pttl', listOf('lost', GHOST)));
    expect(pttlMs).toBeGreaterThan(0);
    expect(pttlMs).toBeLessThanOrEqual(1000);
    await expect.poll(() => server.keys(), { timeout: 3000, interval: 100 }).toEqual([]);
    // Nobody popped it, so nobody acked it: the bytes stay counted until the request is cleaned up.
    expect(producer.inflightBytes(TALKER, GHOST)).toBeGreaterThan(1000);
    producer.cleanup('lost');
    expect(producer.inflightBytes(TALKER, GHOST)).toBe(0);
  });

  it('cleanup on the consumer deletes the request list, rejects its gets and drops its late frames', async () => {
    const producer = shared[TALKER];
    await producer.put(TALKER, GHOST, key('gone', 0), bytes(100, 1), later());
    await producer.put(TALKER, GHOST, key('gone', 1), bytes(100, 2), later());
    await producer.put(TALKER, GHOST, key('kept', 0), bytes(100, 3), later());
    expect((await server.keys()).sort()).toEqual([listOf('gone', GHOST), listOf('kept', GHOST)].sort());
    const ghost = await open(server.url, GHOST);
    const pending = ghost.get(TALKER, GHOST, key('gone', 5), later());
    ghost.cleanup('gone');
    expect(await codeOf(pending)).toBe('CHORUS_ERR_REQUEST_CANCELLED');
    await expect.poll(() => server.keys()).toEqual([listOf('kept', GHOST)]);

    // A late frame of the cleaned request: popped (its bell rings), acked, and dropped rather than kept.
    const before = producer.inflightBytes(TALKER, GHOST);
    await producer.put(TALKER, GHOST, key('gone', 2), bytes(100, 4), later());
    await expect.poll(() => producer.inflightBytes(TALKER, GHOST)).toBe(before); // its ack came back
    expect(await codeOf(ghost.get(TALKER, GHOST, key('gone', 2), later()))).toBe('CHORUS_ERR_REQUEST_CANCELLED');

    ghost.cleanup('kept');
    await expect.poll(() => server.keys()).toEqual([]);
    producer.cleanup('gone');
    producer.cleanup('kept');
    expect(producer.inflightBytes(TALKER, GHOST)).toBe(0);
  });

  it('dropSent on the producer (a request let go everywhere) deletes its lists, after its earlier pushes', async () => {
    const producer = shared[TALKER];
    await producer.put(TALKER, GHOST, key('abandoned', 0), bytes(100, 1), later());
    await producer.put(TALKER, GHOST, key('still', 0), bytes(100, 2), later());
    // Not awaited: the push is still on its way through the I/O thread when the deletion is asked for.
    const late = producer.put(TALKER, GHOST, key('abandoned', 1), bytes(100, 3), later());
    producer.dropSent('abandoned');
    await late;
    await expect.poll(() => server.keys()).toEqual([listOf('still', GHOST)]);
    const ghost = await open(server.url, GHOST);
    ghost.cleanup('still');
    await expect.poll(() => server.keys()).toEqual([]);
    producer.cleanup('abandoned');
    producer.cleanup('still');
    expect(producer.inflightBytes(TALKER, GHOST)).toBe(0);
  });

  it('rejects a get with CHORUS_ERR_CHUNK_TIMEOUT at its deadline', async () => {
    const consumer = shared[CODE2WAV];
    const start = Date.now();
    expect(await codeOf(consumer.get(TALKER, CODE2WAV, key('late', 0), start + 150))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    expect(Date.now() - start).toBeGreaterThanOrEqual(150);
  });

  it('holds a put while max_edge_bytes sit unpopped; acks from the consumer give the credit back', async () => {
    // The second producer (shared: it sends nothing until the end) is up already: only the consumer comes up late.
    const producer = await open(server.url, TALKER, { maxEdgeBytes: 10 * 1024 });
    const thinker = shared[THINKER];
    const frame = (seed: number) => bytes(8 * 1024, seed);
    await producer.put(TALKER, GHOST, key('bp', 0), frame(0), later()); // an empty edge admits any frame
    const held = producer.inflightBytes(TALKER, GHOST);
    expect(held).toBeGreaterThan(8 * 1024);

    const start = Date.now();
    expect(await codeOf(producer.put(TALKER, GHOST, key('bp', 1), frame(1), start + 300))).toBe(
      'CHORUS_ERR_BACKPRESSURE_TIMEOUT',
    );
    expect(Date.now() - start).toBeGreaterThanOrEqual(300);
    expect(await server.cli('llen', listOf('bp', GHOST))).toBe('1\n'); // the refused frame was never pushed

    let waitingDone = false;
    // This put's deadline is not under test (the one above is): it waits for the acks below, however slow the machine.
    const waiting = producer
      .put(TALKER, GHOST, key('bp', 2), frame(2), Date.now() + 120_000)
      .then(() => (waitingDone = true));
    // The consumer comes up late; another producer's frame of the same request rings the list's bell, the consumer
    // pops both frames and acks each producer its bytes, which lets the waiting put through.
    const ghost = await open(server.url, GHOST);
    expect(waitingDone).toBe(false);
    expect(producer.inflightBytes(TALKER, GHOST)).toBe(held);
    await thinker.put(THINKER, GHOST, key('bp', 0), bytes(10, 7), later());
    await waiting;

    expectSameBytes(await ghost.get(TALKER, GHOST, key('bp', 0), later()), frame(0));
    expectSameBytes(await ghost.get(TALKER, GHOST, key('bp', 2), later()), frame(2));
    expectSameBytes(await ghost.get(THINKER, GHOST, key('bp', 0), later()), bytes(10, 7));
    expect(await codeOf(ghost.get(TALKER, GHOST, key('bp', 1), Date.now() + 50))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    await expect.poll(() => producer.inflightBytes(TALKER, GHOST)).toBe(0);
    await expect.poll(() => thinker.inflightBytes(THINKER, GHOST)).toBe(0);
  });

  it('refuses a frame over max_frame_bytes with CHORUS_ERR_FRAME_TOO_LARGE and writes nothing', async () => {
    const producer = await open(server.url, TALKER, { maxFrameBytes: 4096 });
    const tooLarge = await rejection(
      producer.put(TALKER, GHOST, key('big', 0), [bytes(3000, 1), bytes(3000, 2)], later()),
    );
    expect(tooLarge.code).toBe('CHORUS_ERR_FRAME_TOO_LARGE');
    expect(tooLarge.message).toContain('max_frame_bytes 4096');
    expect(producer.inflightBytes(TALKER, GHOST)).toBe(0);
    expect(await server.keys()).toEqual([]);
  });

  it('rejects pending gets and later calls with CHORUS_ERR_CONNECTOR_CLOSED on close', async () => {
    const connector = await open(server.url, CODE2WAV);
    const pending = connector.get(TALKER, CODE2WAV, key('closing', 0), later());
    await connector.close();
    await connector.close(); // idempotent
    expect(await codeOf(pending)).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    expect(await codeOf(connector.get(TALKER, CODE2WAV, key('closing', 1), later()))).toBe(
      'CHORUS_ERR_CONNECTOR_CLOSED',
    );
    expect(await codeOf(connector.put(CODE2WAV, TALKER, key('closing', 0), bytes(1, 1), later()))).toBe(
      'CHORUS_ERR_CONNECTOR_CLOSED',
    );
  });

  it('fails to open with a wrong password, saying the password is wrong (and not showing it)', async () => {
    const wrong = [
      { url: server.url.replace(server.password, 'not-the-password') },
      { url: `redis://127.0.0.1:${server.port}`, password: 'not-the-password' },
    ];
    // Opened together: each boots an I/O thread before Redis refuses it.
    const failures = await Promise.all(wrong.map((o) => rejection(RedisConnector.open(CODE2WAV, { ...BASE, ...o }))));
    for (const failure of failures) {
      expect(failure.code).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
      expect(failure.message).toMatch(/password \(or ACL user\) is wrong/);
      expect(failure.message).not.toContain('not-the-password');
    }
  });
});

describe('redis connector on a full redis-server (maxmemory, noeviction)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    // An empty redis-server 7.0 already uses ~1 MB: 2 MB leaves room for a few frames before it is full.
    server = await RedisServer.start({ maxmemory: '2mb' });
  });
  afterAll(() => server?.stop());
  expectNoKeysAfterEach(() => server);

  it('fails the put that Redis refuses with CHORUS_ERR_TRANSPORT_UNAVAILABLE naming maxmemory', async () => {
    const producer = await open(server.url, TALKER);
    let stored = 0;
    let refused: { code: unknown; message: string } | null = null;
    for (let seq = 0; seq < 32 && refused === null; seq++) {
      try {
        await producer.put(TALKER, GHOST, key('full', seq), bytes(256 * 1024, seq), later());
        stored++;
      } catch (err) {
        refused = { code: (err as { code?: unknown }).code, message: (err as Error).message };
      }
    }
    expect(stored).toBeGreaterThan(0);
    expect(refused?.code).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(refused?.message).toMatch(/maxmemory/);
    expect(Number(await server.cli('llen', listOf('full', GHOST)))).toBe(stored);
    // Only the stored frames count against the edge: the refused one gave its credit back.
    expect(producer.inflightBytes(TALKER, GHOST)).toBeLessThan((stored + 1) * 256 * 1024);
    expect(producer.inflightBytes(TALKER, GHOST)).toBeGreaterThan(stored * 256 * 1024);

    const ghost = await open(server.url, GHOST);
    ghost.cleanup('full'); // DEL works on a full Redis
    await expect.poll(() => server.keys()).toEqual([]);
  });
});

describe('redis connector across a redis-server outage', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());
  expectNoKeysAfterEach(() => server);
  // A paused Redis (freeze below) resumes before the key check (after-each hooks run last-registered first) and
  // before the connectors close (after the after-each hooks): both need it to answer.
  afterEach(() => server.resume());

  it('fails gets and puts promptly while Redis is down and works again, same objects, once it is back', async () => {
    const [producer, consumer] = await Promise.all([open(server.url, TALKER), open(server.url, CODE2WAV)]);
    await producer.put(TALKER, CODE2WAV, key('before', 0), bytes(4096, 1), later());
    expectSameBytes(await consumer.get(TALKER, CODE2WAV, key('before', 0), later()), bytes(4096, 1));

    const start = Date.now();
    // Its outcome is observed from the start: it rejects while the kill is still being awaited.
    const pending = codeOf(consumer.get(TALKER, CODE2WAV, key('during', 0), start + 20_000));
    await server.kill();
    expect(await pending).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(Date.now() - start).toBeLessThan(2000); // told by the link going down, not by the 20 s deadline
    const putStart = Date.now();
    expect(await codeOf(producer.put(TALKER, CODE2WAV, key('during', 1), bytes(10, 2), later()))).toBe(
      'CHORUS_ERR_TRANSPORT_UNAVAILABLE',
    );
    expect(await codeOf(consumer.get(TALKER, CODE2WAV, key('during', 1), later()))).toBe(
      'CHORUS_ERR_TRANSPORT_UNAVAILABLE',
    );
    // At once: not waiting on the 10 s deadline of later() (the bound is the get's above, a fifth of it; a put that
    // waited would take the whole 10 s; 100 ms here was missed at load 25-36 with 326 ms).
    expect(Date.now() - putStart).toBeLessThan(2000);

    await server.restart();
    // Back when a get with no time left times out instead of failing on the link (both of its connections are up,
    // the subscriber resubscribed), and when a put goes through.
    const probe = key('probe', 0);
    await expect
      .poll(() => codeOf(consumer.get(TALKER, CODE2WAV, probe, Date.now())), { timeout: 10_000 })
      .toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    await expect
      .poll(() => codeOf(producer.put(TALKER, CODE2WAV, key('after', 0), bytes(4096, 3), later())), { timeout: 10_000 })
      .toBe('resolved');
    expectSameBytes(await consumer.get(TALKER, CODE2WAV, key('after', 0), later()), bytes(4096, 3));
    await producer.put(TALKER, CODE2WAV, key('after', 1), bytes(4096, 4), later());
    expectSameBytes(await consumer.get(TALKER, CODE2WAV, key('after', 1), later()), bytes(4096, 4));
    await expect.poll(() => producer.inflightBytes(TALKER, CODE2WAV)).toBe(0);
  });

  /** Redis stops answering (SIGSTOP) with its connections open: no error, no reply, until it resumes. */
  function freeze(): () => void {
    server.pause();
    return () => server.resume();
  }

  it('fails a put Redis never confirms at its deadline; the late push is credited once, by its ack', async () => {
    const producer = await open(server.url, TALKER);
    const first = bytes(1000, 1);
    await producer.put(TALKER, GHOST, key('stalled', 0), first, later());
    const held = producer.inflightBytes(TALKER, GHOST);

    const thaw = freeze();
    const start = Date.now();
    const failed = await rejection(producer.put(TALKER, GHOST, key('stalled', 1), bytes(2000, 2), start + 500));
    expect(failed.code).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(failed.message).toContain('did not confirm the push');
    expect(Date.now() - start).toBeLessThan(5000); // at its deadline, not whenever Redis answers
    // Its fate is unknown: its bytes stay counted until an ack or a refusal says what became of it.
    const withStalled = producer.inflightBytes(TALKER, GHOST);
    expect(withStalled).toBeGreaterThan(held + 2000);

    thaw();
    await expect.poll(() => server.cli('llen', listOf('stalled', GHOST)), { timeout: 10_000 }).toBe('2\n');
    // The push's late reply (success) credits nothing; the ack of the consumer that takes both frames credits them.
    const ghost = await open(server.url, GHOST);
    const last = bytes(10, 3);
    await producer.put(TALKER, GHOST, key('stalled', 2), last, later()); // rings GHOST's bell: it pops the list
    expectSameBytes(await ghost.get(TALKER, GHOST, key('stalled', 0), later()), first);
    expectSameBytes(await ghost.get(TALKER, GHOST, key('stalled', 1), later()), bytes(2000, 2));
    expectSameBytes(await ghost.get(TALKER, GHOST, key('stalled', 2), later()), last);
    await expect.poll(() => producer.inflightBytes(TALKER, GHOST)).toBe(0);
  });
});

describe('redis connector on a 3-node Redis Cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start();
  });
  afterAll(() => cluster?.stop());
  const shared = sharedConnectors(() => cluster.url, [TALKER, THINKER, CODE2WAV]);
  const keysPerNode = () => Promise.all(cluster.nodes.map((n) => n.keys()));
  afterEach(async () => {
    expect((await keysPerNode()).flat()).toEqual([]);
  });

  it('round-trips frames of 30 requests', async () => {
    const [producer, consumer] = [shared[TALKER], shared[CODE2WAV]];
    const ids = Array.from({ length: 30 }, (_, i) => `req-${i}`);
    await Promise.all(ids.map((id, i) => producer.put(TALKER, CODE2WAV, key(id, 0), bytes(2048, i), later())));
    const got = await Promise.all(ids.map((id) => consumer.get(TALKER, CODE2WAV, key(id, 0), later())));
    got.forEach((frame, i) => expectSameBytes(frame, bytes(2048, i)));
    await expect.poll(() => producer.inflightBytes(TALKER, CODE2WAV)).toBe(0);
  });

  it('spreads requests over the shards, one list each, and empties every node once consumed', async () => {
    // Both producers are up already (shared; the second sends only after the check): only the consumer comes up late.
    const [producer, thinker] = [shared[TALKER], shared[THINKER]];
    const ids = Array.from({ length: 30 }, (_, i) => `spread-${i}`);
    await Promise.all(ids.map((id, i) => producer.put(TALKER, GHOST, key(id, 0), bytes(512, i), later())));
    const perNode = await keysPerNode();
    expect(perNode.flat().sort()).toEqual(ids.map((id) => listOf(id, GHOST)).sort());
    expect(perNode.filter((keys) => keys.length > 0).length).toBeGreaterThan(1);

    // A second frame of each request, from another producer, rings each list's bell for the late consumer.
    const ghost = await open(cluster.url, GHOST);
    await Promise.all(ids.map((id, i) => thinker.put(THINKER, GHOST, key(id, 0), bytes(100, i), later())));
    for (const [i, id] of ids.entries()) {
      expectSameBytes(await ghost.get(TALKER, GHOST, key(id, 0), later()), bytes(512, i));
      expectSameBytes(await ghost.get(THINKER, GHOST, key(id, 0), later()), bytes(100, i));
    }
    await expect.poll(() => producer.inflightBytes(TALKER, GHOST)).toBe(0);
    await expect.poll(() => thinker.inflightBytes(THINKER, GHOST)).toBe(0);
  });
});
