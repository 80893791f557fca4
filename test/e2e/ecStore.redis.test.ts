/**
 * Main's EC store over a real redis-server, with rows written the way a Thinker instance writes them: a pinned
 * entry is never evicted (its rows stay in Redis while a request uses them, and an entry that would need its room
 * is refused and deleted), an unpinned one is evicted least recently used first and its key deleted, a TTL use
 * renews the key's expiry, drops reach the holder, and close() leaves no key of its run (and touches no other).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logger } from '../../src/common/log.ts';
import { EcStore } from '../../src/engine/ec/EcStore.ts';
import { EcRedis } from '../../transport/redis/EcRedis.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const ROW_BYTES = 4096;
const rows = (fill: number) => new Float32Array(ROW_BYTES / 4).fill(fill);

describe('EcStore over Redis', () => {
  let redis: RedisServer;
  let writer: EcRedis; // stands in for a Thinker instance's link
  let store: EcStore;
  const prefix = `ecunit${process.pid}`;
  const ttlMs = 60_000;

  beforeAll(async () => {
    redis = await RedisServer.start();
    const settings = { budgetBytes: 2 * ROW_BYTES, ttlMs, redis: { url: redis.url, keyPrefix: prefix } };
    writer = await EcRedis.open(settings.redis, () => undefined);
    store = await EcStore.open(settings, logger.child({ test: 'ec' }));
    store.noteEncoder('image-encoder', 'id-A');
  });

  afterAll(async () => {
    await writer?.close();
    await redis?.stop();
  });

  /** What a Thinker does with an encoder's rows: SET them, then tell main (ec_stored). */
  async function keep(name: string, seq: number): Promise<void> {
    await writer.set(store.namespace!, `content-${name}`, rows(seq), ttlMs);
    store.onStored('thinker#0', {
      type: 'ec_stored',
      requestId: `r-${name}`,
      itemKey: `id-A:bytes-${name}`,
      contentKey: `content-${name}`,
      bytes: ROW_BYTES,
      seq,
      remote: true,
    });
  }
  const query = (name: string, index = 0) => ({ index, bytesKey: `bytes-${name}`, encoderStageId: 'image-encoder' });
  const keys = async () => (await redis.keys()).filter((k) => k.startsWith(`${prefix}:ec:`)).sort();
  /** Redis deletes what main evicts asynchronously (UNLINK is not awaited on the request path). */
  async function keysBecome(want: string[]): Promise<void> {
    const deadline = Date.now() + 5000;
    while (JSON.stringify(await keys()) !== JSON.stringify(want)) {
      if (Date.now() > deadline) expect(await keys()).toEqual(want);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('never evicts a pinned entry; evicts the least recently used unpinned one and deletes its key', async () => {
    await keep('a', 1);
    await keep('b', 2);
    // Request r1 takes a from the store (pinned) on thinker#1: remote, since only thinker#0 has a copy.
    const plan = store.plan('r1', [query('a')], 'thinker#1');
    expect(plan.get(0)).toEqual({ itemKey: 'id-A:bytes-a', contentKey: 'content-a', namespace: store.namespace });
    expect(Array.from((await writer.get(store.namespace!, 'content-a'))!)).toEqual(Array.from(rows(1)));
    // c needs room: b (unpinned) goes, a (pinned) stays.
    await keep('c', 3);
    expect(store.where('bytes-a', 'image-encoder')).not.toBeNull();
    expect(store.where('bytes-b', 'image-encoder')).toBeNull();
    await keysBecome([`${store.namespace}:content-a`, `${store.namespace}:content-c`]);
    // Pin c too: both entries are pinned, d cannot get room and is refused (its key deleted).
    store.plan('r2', [query('c')], 'thinker#0');
    await keep('d', 4);
    expect(store.where('bytes-d', 'image-encoder')).toBeNull();
    expect(store.stats).toMatchObject({ entries: 2, pinnedBytes: 2 * ROW_BYTES, refused: 1, evictions: 1 });
    await keysBecome([`${store.namespace}:content-a`, `${store.namespace}:content-c`]);
    expect(store.stats.bytes).toBeLessThanOrEqual(2 * ROW_BYTES);
    // The holder is told to forget the copies that left (b evicted, d refused), with the seq each covers.
    expect(store.takeDrops('thinker#0')).toEqual([
      { contentKey: 'content-b', seq: 2 },
      { contentKey: 'content-d', seq: 4 },
    ]);
    // r1 ends: a is evictable again, and goes for e.
    store.release('r1');
    await keep('e', 5);
    expect(store.where('bytes-a', 'image-encoder')).toBeNull();
    await keysBecome([`${store.namespace}:content-c`, `${store.namespace}:content-e`]);
    store.release('r2');
  });

  it('another encoder identity never sees these rows', () => {
    expect(store.where('bytes-c', 'image-encoder')).not.toBeNull();
    store.noteEncoder('image-encoder', 'id-B'); // an instance of the stage with another model: lookups stop
    expect(store.where('bytes-c', 'image-encoder')).toBeNull();
    expect(store.plan('r3', [query('c')], 'thinker#0').size).toBe(0);
  });

  it('a use renews the TTL of the key in Redis; each run of the store has keys of its own', async () => {
    const fresh = await EcStore.open(
      { budgetBytes: 1 << 20, ttlMs, redis: { url: redis.url, keyPrefix: prefix } },
      logger.child({ test: 'ec' }),
    );
    fresh.noteEncoder('image-encoder', 'id-A');
    expect(fresh.namespace).toMatch(new RegExp(`^${prefix}:ec:[0-9a-f]{12}$`));
    expect(fresh.namespace).not.toBe(store.namespace);
    const key = `${fresh.namespace}:content-c`;
    await writer.set(fresh.namespace!, 'content-c', rows(9), ttlMs);
    await redis.cli('PEXPIRE', key, '5000');
    fresh.onStored('thinker#0', {
      type: 'ec_stored',
      requestId: 'r',
      itemKey: 'id-A:bytes-c',
      contentKey: 'content-c',
      bytes: ROW_BYTES,
      seq: 9,
      remote: true,
    });
    fresh.plan('r4', [query('c')], 'thinker#1');
    const deadline = Date.now() + 5000;
    while (Number(await redis.cli('PTTL', key)) <= 5000) {
      if (Date.now() > deadline) throw new Error('the TTL was not renewed');
      await new Promise((r) => setTimeout(r, 20));
    }
    await fresh.close(); // sweeps its own run's keys, not the other store's
    expect(await keys()).toEqual([`${store.namespace}:content-c`, `${store.namespace}:content-e`]);
  });

  it("close() deletes every key of its run and nobody else's", async () => {
    await writer.set(store.namespace!, 'content-x', rows(7), ttlMs);
    await redis.cli('SET', 'other:key', '1');
    await store.close();
    expect(await keys()).toEqual([]);
    expect(await redis.keys()).toEqual(['other:key']);
  });
});
