/**
 * One test body, run against every in-host Connector: the shm connector (two instances in this process,
 * talking through a real ring) and the inproc connector.
 */
import { stat } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import type { ErrorCode } from '../../src/common/errors.ts';
import { chunkKey, type Connector } from '../../transport/Connector.ts';
import { InprocConnector } from '../../transport/inproc/InprocConnector.ts';
import { ShmConnector } from '../../transport/shm/ShmConnector.ts';
import { codeOf } from '../helpers/errors.ts';

interface Pair {
  producer: Connector;
  consumer: Connector;
  dispose(): Promise<void>;
}

const FROM = 'talker#0';
const TO = 'code2wav#0';
const CAPACITY = 4096;

const factories: Record<string, () => Pair> = {
  shm: () => {
    const edges = ShmConnector.createRings([{ from: FROM, to: TO }], CAPACITY);
    const producer = ShmConnector.open({ edges, me: FROM });
    const consumer = ShmConnector.open({ edges, me: TO, maxKeptBytes: CAPACITY });
    return {
      producer,
      consumer,
      async dispose() {
        await Promise.all([producer.close(), consumer.close()]);
        ShmConnector.unlinkRings(edges);
      },
    };
  },
  inproc: () => {
    const c = new InprocConnector({ capacityBytes: CAPACITY });
    return { producer: c, consumer: c, dispose: () => c.close() };
  },
};

function frame(seq: number, size: number): Uint8Array {
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (seq * 13 + i) & 0xff;
  return out;
}

const later = () => Date.now() + 10_000;
let pair: Pair | null = null;
afterEach(async () => {
  await pair?.dispose();
  pair = null;
});

describe.each(Object.keys(factories))('%s connector', (kind) => {
  const open = (): Pair => (pair = (factories[kind] as () => Pair)());
  const key = (seq: number, requestId = 'req-1') => chunkKey(requestId, 'code2wav', seq);

  it('delivers frames by key, in any get order, byte for byte', async () => {
    const { producer, consumer } = open();
    expect(producer.kind).toBe(kind);
    const early = consumer.get(FROM, TO, key(2), later()); // asked before it exists
    for (const seq of [0, 1, 2]) await producer.put(FROM, TO, key(seq), frame(seq, 100 + seq * 500), later());
    expect(await consumer.get(FROM, TO, key(1), later())).toEqual(frame(1, 600));
    expect(await consumer.get(FROM, TO, key(0), later())).toEqual(frame(0, 100));
    expect(await early).toEqual(frame(2, 1100));
    await producer.put(FROM, TO, key(3), new Uint8Array(0), later()); // an empty final chunk is a frame
    expect((await consumer.get(FROM, TO, key(3), later())).byteLength).toBe(0);
  });

  it('get rejects CHUNK_TIMEOUT at its deadline', async () => {
    const { consumer } = open();
    const deadline = Date.now() + 40;
    expect(await codeOf(consumer.get(FROM, TO, key(0), deadline))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
  });

  it('cleanup drops a request: its pending gets reject, other requests are untouched', async () => {
    const { producer, consumer } = open();
    const pending = codeOf(consumer.get(FROM, TO, key(1, 'gone'), later()));
    const survivor = consumer.get(FROM, TO, key(0, 'kept'), later());
    await producer.put(FROM, TO, key(0, 'gone'), frame(0, 10), later());
    consumer.cleanup('gone');
    expect(await pending).toBe('CHORUS_ERR_REQUEST_CANCELLED');
    await producer.put(FROM, TO, key(0, 'kept'), frame(7, 10), later());
    expect(await survivor).toEqual(frame(7, 10));
  });

  it('bounded capacity: puts block, time out at their deadline, and resume when a get frees room', async () => {
    const { producer, consumer } = open();
    const size = 1000;
    let accepted = 0;
    let code: ErrorCode | 'resolved' = 'resolved';
    let deadline = 0;
    while (accepted < 100) {
      deadline = Date.now() + 100;
      code = await codeOf(producer.put(FROM, TO, key(accepted), frame(accepted, size), deadline));
      if (code !== 'resolved') break;
      accepted++;
    }
    expect(code).toBe('CHORUS_ERR_BACKPRESSURE_TIMEOUT');
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
    expect(accepted).toBeGreaterThanOrEqual(3); // a few frames fit...
    expect(accepted).toBeLessThan(20); // ...but the edge is bounded (4 KiB unclaimed + the ring)

    const timedOut = accepted;
    let unblocked = false;
    const blocked = producer
      .put(FROM, TO, key(timedOut + 1), frame(timedOut + 1, size), later())
      .then(() => (unblocked = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(unblocked).toBe(false);
    expect(await consumer.get(FROM, TO, key(0), later())).toEqual(frame(0, size));
    await blocked;
    for (let seq = 1; seq < timedOut; seq++)
      expect(await consumer.get(FROM, TO, key(seq), later())).toEqual(frame(seq, size));
    expect(await consumer.get(FROM, TO, key(timedOut + 1), later())).toEqual(frame(timedOut + 1, size));
    // The put that timed out left nothing behind.
    expect(await codeOf(consumer.get(FROM, TO, key(timedOut), Date.now() + 30))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
  });

  it('close rejects pending gets and later puts with CONNECTOR_CLOSED, idempotently', async () => {
    const { producer, consumer } = open();
    const pending = codeOf(consumer.get(FROM, TO, key(0), later()));
    await consumer.close();
    await consumer.close();
    expect(await pending).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    await producer.close();
    expect(await codeOf(producer.put(FROM, TO, key(1), frame(1, 1), later()))).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
  });
});

describe('shm connector edges', () => {
  it('readNow hands what a ring holds to its gets before the event loop polls again', async () => {
    const edges = ShmConnector.createRings([{ from: FROM, to: TO }], CAPACITY);
    const producer = ShmConnector.open({ edges, me: FROM });
    const consumer = ShmConnector.open({ edges, me: TO });
    try {
      const key = (seq: number) => chunkKey('req-1', 'code2wav', seq);
      await new Promise<void>((r) => setImmediate(r)); // the receive loop waits on the ring's doorbell
      // From here on in the poll phase (an fs request's completion): setImmediate's callback runs before the event
      // loop polls the doorbell again, so only the read now can deliver by then.
      await stat(import.meta.filename);
      for (const seq of [0, 1, 2]) await producer.put(FROM, TO, key(seq), frame(seq, 60), later());
      const gets = Promise.all([0, 1, 2].map((seq) => consumer.get(FROM, TO, key(seq), later())));
      consumer.readNow();
      const turn = new Promise<string>((r) => setImmediate(() => r('turn')));
      expect(await Promise.race([gets.then(() => 'gets'), turn])).toBe('gets');
      expect(await gets).toEqual([0, 1, 2].map((seq) => frame(seq, 60)));
      // The receive loop goes on after it: the doorbell's rung byte was drained, the next frame wakes it as before.
      await producer.put(FROM, TO, key(3), frame(3, 60), later());
      expect(await consumer.get(FROM, TO, key(3), later())).toEqual(frame(3, 60));
    } finally {
      await Promise.all([producer.close(), consumer.close()]);
      ShmConnector.unlinkRings(edges);
    }
  });

  it('refuses edges that are not in its table or not its own', async () => {
    const edges = ShmConnector.createRings([{ from: FROM, to: TO }], CAPACITY);
    const producer = ShmConnector.open({ edges, me: FROM });
    try {
      expect(await codeOf(producer.put(TO, FROM, 'r_s_0', frame(0, 1), later()))).toBe('CHORUS_ERR_CONFIG_INVALID');
      expect(await codeOf(producer.get(FROM, TO, 'r_s_0', later()))).toBe('CHORUS_ERR_CONFIG_INVALID');
    } finally {
      await producer.close();
      ShmConnector.unlinkRings(edges);
    }
    expect(() => ShmConnector.open({ edges, me: TO })).toThrow(expect.objectContaining({ code: 'CHORUS_ERR_SHM' }));
  });
});
