import { describe, expect, it } from 'vitest';
import { chunkKey } from '../../transport/Connector.ts';
import { onDeadline } from '../../src/common/deadline.ts';
import { KeyedMailbox } from '../../transport/KeyedMailbox.ts';
import { codeOf } from '../helpers/errors.ts';

const bytes = (...v: number[]) => new Uint8Array(v);
const later = () => Date.now() + 10_000;

describe('KeyedMailbox', () => {
  it('hands frames to gets in any order: kept until asked, or waited for', async () => {
    const box = new KeyedMailbox('a->b');
    const k = (seq: number) => chunkKey('req1', 'talker', seq);
    box.deliver(k(0), bytes(0));
    box.deliver(k(1), bytes(1, 1));
    expect(box.held()).toEqual({ keptFrames: 2, keptBytes: 3, pendingGets: 0 });
    const waiting2 = box.get(k(2), later());
    expect(await box.get(k(1), later())).toEqual(bytes(1, 1)); // out of order: 1 before 0
    box.deliver(k(2), bytes(2));
    expect(await waiting2).toEqual(bytes(2));
    expect(await box.get(k(0), later())).toEqual(bytes(0));
    expect(box.held()).toEqual({ keptFrames: 0, keptBytes: 0, pendingGets: 0 });
  });

  it('rejects CHUNK_TIMEOUT at the deadline, not before, and forgets the get', async () => {
    const box = new KeyedMailbox('a->b');
    const deadline = Date.now() + 50;
    expect(await codeOf(box.get('r_s_0', deadline))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
    expect(box.held().pendingGets).toBe(0);
    box.deliver('r_s_0', bytes(7)); // arrives late: kept for a later get
    expect(await box.get('r_s_0', later())).toEqual(bytes(7));
    expect(await codeOf(box.get('r_s_1', Date.now() - 1))).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
  });

  it('cleanup drops kept frames, rejects pending gets of that request only, and drops its late frames', async () => {
    const box = new KeyedMailbox('a->b');
    box.deliver('req_1_talker_0', bytes(1, 2, 3));
    box.deliver('req_10_talker_0', bytes(4)); // shares a prefix with req_1 but is another request
    const pending = codeOf(box.get('req_1_talker_1', later()));
    const other = box.get('req_10_talker_1', later());
    box.cleanup('req_1');
    expect(await pending).toBe('CHORUS_ERR_REQUEST_CANCELLED');
    expect(box.held()).toEqual({ keptFrames: 1, keptBytes: 1, pendingGets: 1 }); // req_10's frame and get
    expect(box.deliver('req_1_talker_2', bytes(9))).toBe(false);
    expect(box.held().keptBytes).toBe(1);
    expect(await codeOf(box.get('req_1_talker_0', later()))).toBe('CHORUS_ERR_REQUEST_CANCELLED');
    box.deliver('req_10_talker_1', bytes(5));
    expect(await other).toEqual(bytes(5));
    expect(await box.get('req_10_talker_0', later())).toEqual(bytes(4));
  });

  it('a duplicate key and a second get for the same key are errors, never silent', async () => {
    const box = new KeyedMailbox('a->b');
    box.deliver('r_s_0', bytes(1));
    const waiting = codeOf(box.get('r_s_1', later()));
    expect(() => box.deliver('r_s_0', bytes(2))).toThrow(
      expect.objectContaining({ code: 'CHORUS_ERR_CHUNK_SEQUENCE' }),
    );
    // The request's stream is broken: its waiting and later gets fail at once instead of timing out.
    expect(await waiting).toBe('CHORUS_ERR_CHUNK_SEQUENCE');
    expect(await codeOf(box.get('r_s_2', later()))).toBe('CHORUS_ERR_CHUNK_SEQUENCE');
    // A duplicate of a frame already consumed is detected too.
    box.deliver('q_s_0', bytes(4));
    expect(await box.get('q_s_0', later())).toEqual(bytes(4));
    expect(() => box.deliver('q_s_0', bytes(5))).toThrow(
      expect.objectContaining({ code: 'CHORUS_ERR_CHUNK_SEQUENCE' }),
    );
    // Other requests are unaffected; two gets for one key are an error.
    const first = box.get('p_s_1', later());
    expect(await codeOf(box.get('p_s_1', later()))).toBe('CHORUS_ERR_CHUNK_SEQUENCE');
    box.deliver('p_s_1', bytes(3));
    expect(await first).toEqual(bytes(3));
  });

  it('close rejects pending gets and room waits with CONNECTOR_CLOSED', async () => {
    const box = new KeyedMailbox('a->b');
    const get = codeOf(box.get('r_s_0', later()));
    box.close();
    box.close();
    expect(await get).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    expect(await codeOf(box.get('r_s_0', later()))).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    expect(box.deliver('r_s_1', bytes(1))).toBe(false);

    const full = new KeyedMailbox('c->d');
    full.deliver('r_s_9', bytes(1, 2, 3, 4));
    const room = codeOf(full.waitForRoom(4, 4, later())); // over the limit and no get waiting: held
    full.close();
    expect(await room).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    expect(full.held()).toEqual({ keptFrames: 0, keptBytes: 0, pendingGets: 0 });
  });

  it('waitForRoom holds producers over the kept limit until a get frees room or starts waiting', async () => {
    const box = new KeyedMailbox('a->b');
    expect(box.admits(100, 10)).toBe(true); // an empty mailbox admits any single frame
    box.deliver('r_s_0', new Uint8Array(8));
    let admitted = false;
    const room = box.waitForRoom(4, 10, later()).then(() => (admitted = true));
    await Promise.resolve();
    expect(admitted).toBe(false);
    await box.get('r_s_0', later()); // frees 8 bytes
    await room;
    expect(admitted).toBe(true);

    box.deliver('r_s_1', new Uint8Array(8));
    const room2 = box.waitForRoom(4, 10, later());
    const wanted = box.get('r_s_2', later()); // a waiting consumer lifts the limit
    await room2;
    box.deliver('r_s_2', bytes(1));
    expect(await wanted).toEqual(bytes(1));

    const deadline = Date.now() + 30;
    expect(await codeOf(box.waitForRoom(4, 10, deadline))).toBe('CHORUS_ERR_BACKPRESSURE_TIMEOUT');
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
  });

  it('onDeadline never fires for +Infinity and can be cancelled', async () => {
    let fired = 0;
    const cancelInfinite = onDeadline(Number.POSITIVE_INFINITY, () => fired++);
    const cancelled = onDeadline(Date.now() + 5, () => fired++);
    cancelled();
    await new Promise<void>((resolve) => onDeadline(Date.now() + 20, resolve));
    cancelInfinite();
    expect(fired).toBe(0);
  });
});
