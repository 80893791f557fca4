/**
 * The redis connector's I/O thread (transport/redis/redisIoThread.ts): Redis is served while the step thread is
 * busy, the thread exits on close, and a thread that dies is a link that went down for good.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { RedisConnector } from '../../transport/redis/RedisConnector.ts';
import { codeOf } from '../helpers/errors.ts';
import { CONNECTOR_BASE as BASE, code2wavKey as key, later, RedisServer } from '../helpers/redisServer.ts';

const TALKER = 'talker#0';
const CODE2WAV = 'code2wav#0';
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Holds this thread as a model step does: synchronously, no event loop turn. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}

async function open(url: string, self: string): Promise<RedisConnector> {
  const connector = await RedisConnector.open(self, { ...BASE, url });
  onTestFinished(() => connector.close());
  return connector;
}

describe('redis connector I/O thread', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());
  afterEach(async () => {
    const left = await server.keys();
    if (left.length > 0) await server.cli('flushall');
    expect(left).toEqual([]);
  });

  it('pushes, pops and acks while the step thread is blocked: the frame is there on the next loop turn', async () => {
    const producer = await open(server.url, TALKER);
    const consumer = await open(server.url, CODE2WAV);
    // Warm both paths once (the first command of a connection may cost more than the rest).
    const warm = consumer.get(TALKER, CODE2WAV, key('warm', 0), later());
    await producer.put(TALKER, CODE2WAV, key('warm', 0), new Uint8Array(64), later());
    await warm;

    let got: Uint8Array | null = null;
    void consumer.get(TALKER, CODE2WAV, key('busy', 0), later()).then((frame) => (got = frame));
    const frame = Uint8Array.from({ length: 2048 }, (_, i) => i & 0xff);
    const put = producer.put(TALKER, CODE2WAV, key('busy', 0), frame, later());
    // Producer and consumer share this thread; it runs no event loop turn while blocked. On the step thread the push
    // would leave only after this (node-redis writes from a setImmediate), then the bell and the LPOP reply would
    // each take a turn of their own.
    busyWait(500);
    await nextTurn();
    expect(got).not.toBeNull();
    expect(Buffer.from(got!).equals(frame)).toBe(true);
    await put;
    await expect.poll(() => producer.inflightBytes(TALKER, CODE2WAV)).toBe(0); // the ack came back too
  });

  it('runs one thread per connector, which closes its connections and exits on close', async () => {
    const connector = await RedisConnector.open(CODE2WAV, { ...BASE, url: server.url });
    const threadId = connector.ioThreadId;
    expect(threadId).toBeGreaterThan(0);
    expect(await server.cli('client', 'list')).toContain('name=chorus:code2wav#0');
    await connector.close();
    expect(connector.ioThreadId).toBeNull();
    await connector.close(); // idempotent
    await expect.poll(async () => (await server.cli('client', 'list')).trim().split('\n')).toHaveLength(1);
  });

  it('starts its thread from the sources too, through tsx, as a checkout that never built dist/ does', async () => {
    // The tier runs helper threads from dist/ (CHORUS_COMPILED=1): the boot file that registers tsx in the thread is
    // taken only without it, when the module picks its entry (transport/redis/RedisIo.ts, on import).
    vi.stubEnv('CHORUS_COMPILED', '0');
    onTestFinished(() => {
      vi.unstubAllEnvs();
    });
    vi.resetModules();
    const fromSource = (await import('../../transport/redis/RedisConnector.ts')).RedisConnector;
    const [producer, consumer] = await Promise.all(
      [TALKER, CODE2WAV].map(async (self) => {
        const connector = await fromSource.open(self, { ...BASE, url: server.url });
        onTestFinished(() => connector.close());
        return connector;
      }),
    );
    const frame = Uint8Array.from({ length: 512 }, (_, i) => (i * 3) & 0xff);
    await producer.put(TALKER, CODE2WAV, key('source', 0), frame, later());
    expect(Buffer.from(await consumer.get(TALKER, CODE2WAV, key('source', 0), later())).equals(frame)).toBe(true);
    await expect.poll(() => producer.inflightBytes(TALKER, CODE2WAV)).toBe(0);
  });

  it('fails what waits, and what comes later at once, when the thread dies; close still works', async () => {
    const producer = await open(server.url, TALKER);
    const consumer = await open(server.url, CODE2WAV);
    const pending = codeOf(consumer.get(TALKER, CODE2WAV, key('crash', 0), later()));
    consumer.crashIoThreadForTest();
    expect(await pending).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(consumer.ioThreadId).toBeNull();
    expect(await codeOf(consumer.get(TALKER, CODE2WAV, key('crash', 1), later()))).toBe(
      'CHORUS_ERR_TRANSPORT_UNAVAILABLE',
    );
    expect(await codeOf(consumer.put(CODE2WAV, TALKER, key('crash', 0), new Uint8Array(8), later()))).toBe(
      'CHORUS_ERR_TRANSPORT_UNAVAILABLE',
    );
    // Its connections went with it; the producer's pushes to the dead instance stay in Redis until cleaned up.
    await producer.put(TALKER, CODE2WAV, key('crash', 0), new Uint8Array(8), later());
    await server.cli('del', `chorus:{crash}:in:${CODE2WAV}`);
    producer.cleanup('crash');
    await consumer.close();
  });

  it('fails a put its thread never answers at its deadline, and one out when the link goes down at once', async () => {
    const producer = await open(server.url, TALKER);
    producer.muteIoThreadForTest();
    const start = Date.now();
    const unanswered = await codeOf(producer.put(TALKER, CODE2WAV, key('mute', 0), new Uint8Array(8), start + 300));
    expect(unanswered).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(Date.now() - start).toBeLessThan(5000);
    // Nobody knows whether it reached Redis: its bytes stay counted (an ack would credit them, a refusal give back).
    expect(producer.inflightBytes(TALKER, CODE2WAV)).toBeGreaterThan(8);

    const cutStart = Date.now();
    const cut = codeOf(producer.put(TALKER, CODE2WAV, key('mute', 1), new Uint8Array(8), cutStart + 30_000));
    await server.kill();
    expect(await cut).toBe('CHORUS_ERR_TRANSPORT_UNAVAILABLE');
    expect(Date.now() - cutStart).toBeLessThan(15_000); // the link going down told it, not its 30 s deadline
    expect(producer.inflightBytes(TALKER, CODE2WAV)).toBe(0); // the outage started the credit over
    await server.restart();
  });
});
