/**
 * ChunkTransferAdapter over a real (in-process) connector: ordering, end of stream, sequence checks, deadlines,
 * cancellation. Two adapters play producer stage and consumer stage.
 */
import { describe, expect, it } from 'vitest';
import { ChunkTransferAdapter, type Arrival } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { InprocConnector } from '../../transport/inproc/InprocConnector.ts';
import { chunkKey } from '../../transport/Connector.ts';
import { encodeFrame, joinParts } from '../../transport/codec.ts';

function pair(capacityBytes?: number) {
  const connector = new InprocConnector({ capacityBytes });
  let wake: () => void = () => undefined;
  const producer = new ChunkTransferAdapter(connector, 'thinker#0', 'thinker', () => undefined);
  const consumer = new ChunkTransferAdapter(connector, 'talker#0', 'talker', () => wake());
  /** Collects arrivals until `count` have come or one is final/an error for every request listed. */
  const arrivals = (until: (all: Arrival[]) => boolean) =>
    new Promise<Arrival[]>((resolve) => {
      const all: Arrival[] = [];
      wake = () => {
        all.push(...consumer.processPendingChunks());
        if (until(all)) resolve(all);
      };
    });
  return { connector, producer, consumer, arrivals };
}

const target = { toInstance: 'talker#0', toStageId: 'talker', keyStage: 'talker' };
const expectOpts = (timeoutMs = 2_000) => ({
  fromInstance: 'thinker#0',
  fromStageId: 'thinker',
  keyStage: 'talker',
  firstChunkDeadline: Date.now() + timeoutMs,
  chunkTimeoutMs: timeoutMs,
});
const finals = (n: number) => (all: Arrival[]) => all.filter((a) => a.error || a.chunk.meta.final).length === n;

describe('ChunkTransferAdapter', () => {
  it('delivers each request in order with a final chunk, interleaved across requests', async () => {
    const { producer, consumer, arrivals } = pair();
    const ids = ['r1', 'r2', 'r3'];
    for (const id of ids) consumer.expect(id, expectOpts());
    const done = arrivals(finals(3));
    const deadline = Date.now() + 2_000;
    for (let seq = 0; seq < 20; seq++) {
      for (const id of ids) {
        const final = seq === 19;
        void producer.saveAsync(
          id,
          target,
          { final, body: { kind: 'audio', pcm: Float32Array.of(seq), sampleRateHz: 24_000 } },
          deadline,
        );
      }
    }
    const all = await done;
    for (const id of ids) {
      const mine = all.filter((a) => a.requestId === id).map((a) => a.chunk!);
      expect(mine.map((c) => c.meta.seq)).toEqual([...Array(20).keys()]);
      expect(mine.map((c) => (c.body?.kind === 'audio' ? c.body.pcm[0] : NaN))).toEqual([...Array(20).keys()]);
      expect(mine.at(-1)!.meta.final).toBe(true);
      expect(mine.slice(0, -1).every((c) => !c.meta.final)).toBe(true);
    }
  });

  it('sends the final chunk even when it carries no data', async () => {
    const { producer, consumer, arrivals } = pair();
    consumer.expect('r', expectOpts());
    const done = arrivals(finals(1));
    await producer.saveAsync('r', target, { final: true, finishReason: 'stop' }, Date.now() + 1_000);
    const [a] = await done;
    expect(a.chunk!.meta).toMatchObject({ seq: 0, final: true, finishReason: 'stop' });
    expect(a.chunk!.body).toBeNull();
  });

  it('fails a request whose chunk carries the wrong sequence number (a duplicate or gap upstream)', async () => {
    const { connector, consumer, arrivals } = pair();
    consumer.expect('r', expectOpts());
    const done = arrivals(finals(1));
    // A misbehaving producer: chunk seq 1 stored under seq 0's key.
    const meta = {
      requestId: 'r',
      from: 'thinker',
      to: 'talker',
      seq: 1,
      final: false,
      sentAtMs: Date.now(),
    };
    await connector.put(
      'thinker#0',
      'talker#0',
      chunkKey('r', 'talker', 0),
      joinParts(encodeFrame(meta)),
      Date.now() + 1_000,
    );
    const [a] = await done;
    expect(a.error?.code).toBe('CHORUS_ERR_CHUNK_SEQUENCE');
  });

  it('fails a request whose chunk body does not match its kind (checked before any core sees it)', async () => {
    const { connector, consumer, arrivals } = pair();
    consumer.expect('r', expectOpts());
    const done = arrivals(finals(1));
    // An audio body without its pcm tensor, as a producer of another version might send.
    const meta = { requestId: 'r', from: 'thinker', to: 'talker', seq: 0, final: false, sentAtMs: Date.now() };
    const frame = encodeFrame({ ...meta, payload: { kind: 'audio', sampleRateHz: 24_000 } });
    await connector.put('thinker#0', 'talker#0', chunkKey('r', 'talker', 0), joinParts(frame), Date.now() + 1_000);
    const [a] = await done;
    expect(a.error?.code).toBe('CHORUS_ERR_FRAME_INVALID');
    expect(a.error?.message).toMatch(/pcm/);
  });

  it('detects a duplicated chunk key', async () => {
    const { connector, consumer, producer, arrivals } = pair();
    consumer.expect('r', expectOpts());
    const done = arrivals((all) => all.length >= 1);
    await producer.saveAsync('r', target, { final: false }, Date.now() + 1_000);
    const meta = {
      requestId: 'r',
      from: 'thinker',
      to: 'talker',
      seq: 0,
      final: false,
      sentAtMs: Date.now(),
    };
    await expect(
      connector.put(
        'thinker#0',
        'talker#0',
        chunkKey('r', 'talker', 0),
        joinParts(encodeFrame(meta)),
        Date.now() + 1_000,
      ),
    ).rejects.toMatchObject({
      code: 'CHORUS_ERR_CHUNK_SEQUENCE',
    });
    await done;
  });

  it('ends a request whose next chunk misses its deadline with a timeout naming the chunk', async () => {
    const { producer, consumer, arrivals } = pair();
    consumer.expect('r', expectOpts(150));
    const done = arrivals(finals(1));
    await producer.saveAsync('r', target, { final: false }, Date.now() + 1_000); // seq 0 arrives, seq 1 never does
    const all = await done;
    expect(all.map((a) => a.chunk?.meta.seq ?? a.error!.code)).toEqual([0, 'CHORUS_ERR_CHUNK_TIMEOUT']);
    expect(all[1].error!.message).toContain('chunk 1 of request r');
  });

  it('a live producer keeps a wait open past its deadlines: a chunk five deadlines late is received', async () => {
    const { producer, consumer, arrivals } = pair();
    let asked = 0;
    const live = { producer: () => ++asked > 0, maxWaitMs: 2_000 };
    const startedAt = Date.now();
    consumer.expect('r', { ...expectOpts(50), live });
    const done = arrivals(finals(1));
    // The chunk comes once the producer was asked at five deadlines, or more: no timer stands in for that event.
    await new Promise<void>((resolve) => {
      const check = () => (asked >= 5 ? resolve() : setImmediate(check));
      check();
    });
    await producer.saveAsync('r', target, { final: true }, Date.now() + 1_000);
    const all = await done;
    expect(all.map((a) => a.chunk?.meta.seq ?? a.error!.code)).toEqual([0]);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(5 * 50);
  });

  it('a producer that stops being live fails its wait at the next deadline, with the chunk timeout', async () => {
    const { consumer, arrivals } = pair();
    let lives = 2; // live at two deadlines, then stopped (hung, gone)
    const live = { producer: () => lives-- > 0, maxWaitMs: 10_000 };
    const startedAt = Date.now();
    consumer.expect('r', { ...expectOpts(50), live });
    const all = await arrivals(finals(1));
    expect(all.map((a) => a.error?.code)).toEqual(['CHORUS_ERR_CHUNK_TIMEOUT']);
    expect(all[0].error!.message).toMatch(/^chunk 0 of request r from thinker#0 did not arrive in time \(past its/);
    expect(all[0].error!.message).toContain('waited on while its producer ran, which then stopped');
    expect(Date.now() - startedAt).toBeLessThan(2_000); // three deadlines, not the 10 s bound
  });

  it('a wait a live producer keeps open still ends at maxWaitMs: a lost chunk is not waited for forever', async () => {
    const { consumer, arrivals } = pair();
    const live = { producer: () => true, maxWaitMs: 400 };
    const startedAt = Date.now();
    consumer.expect('r', { ...expectOpts(100), live });
    const all = await arrivals(finals(1));
    const waitedMs = Date.now() - startedAt;
    expect(all.map((a) => a.error?.code)).toEqual(['CHORUS_ERR_CHUNK_TIMEOUT']);
    expect(all[0].error!.message).toContain('(400 ms, chunk_policy.max_chunk_wait_ms, its producer live all along)');
    expect(waitedMs).toBeGreaterThanOrEqual(390);
    expect(waitedMs).toBeLessThan(3_000);
  });

  it('cancel stops receiving: nothing more of the request arrives, other requests flow', async () => {
    const { producer, consumer, arrivals } = pair();
    consumer.expect('gone', expectOpts());
    consumer.expect('kept', expectOpts());
    const done = arrivals((all) => all.some((a) => a.requestId === 'kept'));
    await producer.saveAsync('gone', target, { final: false }, Date.now() + 1_000);
    consumer.cancel('gone');
    expect(consumer.processPendingChunks().filter((a) => a.requestId === 'gone')).toEqual([]); // queued ones dropped
    await producer.saveAsync('gone', target, { final: true }, Date.now() + 1_000);
    await producer.saveAsync('kept', target, { final: true }, Date.now() + 1_000);
    const all = await done;
    expect(all.filter((a) => a.requestId === 'gone' && (a.error || a.chunk.meta.seq > 0))).toEqual([]);
  });

  it('a full edge holds the producer back until the consumer takes chunks (backpressure, not a queue)', async () => {
    const { producer, consumer, arrivals } = pair(64 * 1024);
    const big = { kind: 'audio', pcm: new Float32Array(12 * 1024), sampleRateHz: 24_000 } as const; // 48 KiB
    void producer.saveAsync('r', target, { final: false, body: big }, Date.now() + 5_000);
    const second = producer.saveAsync('r', target, { final: true, body: big }, Date.now() + 5_000);
    let secondDone = false;
    void second.then(() => (secondDone = true));
    await new Promise((r) => setImmediate(r));
    expect(secondDone).toBe(false); // 96 KiB unclaimed would exceed 64 KiB
    expect(producer.pendingSendBytes).toBeGreaterThan(48 * 1024);
    const done = arrivals(finals(1));
    consumer.expect('r', expectOpts());
    await second;
    expect((await done).length).toBe(2);
  });

  it('puts at once, within the caller, on a connector that keeps call order; on others after its turn', async () => {
    for (const inOrder of [true, false]) {
      const connector = new InprocConnector({});
      const puts: string[] = [];
      const put = connector.put.bind(connector);
      connector.put = (from, to, key, frame, deadline) => {
        puts.push(key);
        return put(from, to, key, frame, deadline);
      };
      if (inOrder) Object.assign(connector, { putsInOrder: () => true });
      const producer = new ChunkTransferAdapter(connector, 'thinker#0', 'thinker', () => undefined);
      const body = { kind: 'audio', pcm: Float32Array.of(1), sampleRateHz: 24_000 } as const;
      const sent = [0, 1, 2].map((i) => producer.saveAsync('r', target, { final: i === 2, body }, Date.now() + 2_000));
      const keys = [0, 1, 2].map((seq) => chunkKey('r', 'talker', seq));
      expect(puts).toEqual(inOrder ? keys : []); // the step's later work runs after the consumer could have it
      await Promise.all(sent);
      expect(puts).toEqual(keys);
      expect(producer.pendingSendBytes).toBe(0);
    }
  });
});
