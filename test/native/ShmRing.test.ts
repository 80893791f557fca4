import { existsSync, statSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ShmRing } from '../../transport/shm/ShmRing.ts';
import { Prng } from '../../stages/sampling/Prng.ts';
import { codeOf } from '../helpers/errors.ts';

const opened: ShmRing[] = [];
function create(capacityBytes: number): ShmRing {
  const ring = ShmRing.create({ capacityBytes });
  opened.push(ring);
  return ring;
}
function attach(name: string): ShmRing {
  const ring = ShmRing.attach(name);
  opened.push(ring);
  return ring;
}
afterEach(() => {
  for (const ring of opened.splice(0)) {
    ring.close();
    ring.unlink();
  }
});

/** Deterministic randomness (the project's seeded PRNG) so a failure replays exactly. */
function prng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.nextFloat();
}

function patterned(size: number, salt: number): Buffer {
  const buf = Buffer.alloc(size);
  for (let i = 0; i < size; i++) buf[i] = (i * 31 + salt) & 0xff;
  return buf;
}

describe('ShmRing', () => {
  it('round-trips a multi-part frame between two mappings of one segment', () => {
    const writer = create(4096);
    const reader = attach(writer.name);
    expect(writer.name).toMatch(new RegExp(`^/chorus-${process.pid}-[0-9a-f]{16}$`));
    expect(reader.tryRead()).toBeNull();
    expect(writer.tryWrite([Buffer.from('head:'), new Uint8Array([1, 2, 3]), Buffer.alloc(0)])).toBe(true);
    expect(writer.tryWrite(Buffer.alloc(0))).toBe(true); // empty frames are frames too
    expect(reader.tryRead()).toEqual(Buffer.concat([Buffer.from('head:'), Buffer.from([1, 2, 3])]));
    expect(reader.tryRead()).toEqual(Buffer.alloc(0));
    expect(reader.tryRead()).toBeNull();
    expect(reader.usedBytes).toBe(0);
  });

  it('writes views at a byte offset, not their whole ArrayBuffer', () => {
    const ring = create(1024);
    const backing = new Uint8Array([9, 9, 1, 2, 3, 9]);
    ring.tryWrite(backing.subarray(2, 5));
    expect([...(ring.tryRead() ?? [])]).toEqual([1, 2, 3]);
  });

  it('keeps every byte across wrap-around with many frame sizes', () => {
    const capacity = 1000; // not a power of two: positions wrap at arbitrary offsets
    const writer = create(capacity);
    const reader = attach(writer.name);
    const rand = prng(42);
    const inFlight: Buffer[] = [];
    let written = 0;
    let read = 0;
    while (read < 3000) {
      // Random mix of writes and reads keeps 0..many frames in flight as positions wrap.
      if (written < 3000 && rand() < 0.6) {
        const size = Math.floor(rand() * rand() * writer.maxFrameBytes);
        const frame = patterned(size, written);
        const cut = Math.floor(rand() * size);
        if (writer.tryWrite([frame.subarray(0, cut), frame.subarray(cut)])) {
          inFlight.push(frame);
          written++;
        }
      } else {
        const got = reader.tryRead();
        if (got === null) continue;
        expect(got.equals(inFlight.shift() as Buffer)).toBe(true);
        read++;
      }
    }
    expect(reader.tryRead()).toBeNull();
  });

  it('an attached mapping has its pages mapped already: writing through a fresh ring costs no page faults', () => {
    const capacity = 4 << 20;
    const owner = create(capacity);
    const writer = attach(owner.name);
    const frame = patterned(256 << 10, 7); // touched before counting: only the ring's pages may fault below
    const before = process.resourceUsage().minorPageFault;
    for (let written = 0; written + frame.length < capacity; written += frame.length + 8) writer.tryWrite(frame);
    const faults = process.resourceUsage().minorPageFault - before;
    // Without MAP_POPULATE each of the ring's 1024 pages faults on its first write (native/src/ring.cc Attach). The
    // count is the whole process's (getrusage RUSAGE_SELF): the worker's other threads (V8's compiler and collector)
    // fault too, 72 of them once in a fresh-clone CI's model tier, so the bound is a quarter of the pages, not ~0.
    expect(faults).toBeLessThan((capacity >> 12) / 4);
  });

  it('accepts a frame of exactly maxFrameBytes and rejects a larger one with FRAME_TOO_LARGE', async () => {
    const ring = create(256);
    expect(ring.maxFrameBytes).toBe(252);
    expect(() => ring.tryWrite(Buffer.alloc(253))).toThrow(
      expect.objectContaining({ code: 'CHORUS_ERR_FRAME_TOO_LARGE' }),
    );
    expect(await codeOf(ring.write([Buffer.alloc(200), Buffer.alloc(53)], Date.now() + 1000))).toBe(
      'CHORUS_ERR_FRAME_TOO_LARGE',
    );
    // Split copy: a max-size frame fits even when the ring is empty at an awkward offset.
    ring.tryWrite(Buffer.alloc(100));
    ring.tryRead();
    expect(ring.tryWrite(patterned(252, 5))).toBe(true);
    expect(ring.tryRead()?.equals(patterned(252, 5))).toBe(true);
  });

  it('backpressure: a blocked write completes when the reader frees room, in FIFO order', async () => {
    const writer = create(256);
    const reader = attach(writer.name);
    let fits = 0;
    while (writer.tryWrite(patterned(40, fits))) fits++;
    expect(fits).toBe(5); // 5 entries of 48 bytes; a 6th needs 48 of the remaining 16
    const order: number[] = [];
    const blocked = [5, 6, 7].map((i) => writer.write(patterned(40, i), Date.now() + 10_000).then(() => order.push(i)));
    const all = Promise.all(blocked);
    const received: number[] = [];
    while (received.length < 8) {
      const frame = await reader.read(Date.now() + 10_000);
      expect(frame).not.toBeNull();
      received.push((frame as Buffer)[0] ?? -1);
    }
    await all;
    expect(order).toEqual([5, 6, 7]);
    expect(received).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((i) => patterned(40, i)[0]));
  });

  it('backpressure: a small write never overtakes a blocked large one', async () => {
    const writer = create(256);
    const reader = attach(writer.name);
    while (writer.tryWrite(Buffer.alloc(40, 1))) continue;
    const large = writer.write(Buffer.alloc(200, 2), Date.now() + 10_000);
    const small = writer.write(Buffer.alloc(8, 3), Date.now() + 10_000);
    expect(reader.tryRead()?.[0]).toBe(1); // 48 bytes free: the small frame would fit, the large not
    expect(writer.usedBytes).toBe(4 * 48);
    const seen: number[] = [];
    while (seen.length < 6) seen.push((await reader.read(Date.now() + 10_000))?.[0] ?? -1);
    await Promise.all([large, small]);
    expect(seen).toEqual([1, 1, 1, 1, 2, 3]);
  });

  it('backpressure: a write rejects BACKPRESSURE_TIMEOUT at its deadline and writes nothing', async () => {
    const writer = create(128);
    while (writer.tryWrite(Buffer.alloc(24))) continue;
    const used = writer.usedBytes;
    const deadline = Date.now() + 80;
    expect(await codeOf(writer.write(Buffer.alloc(24), deadline))).toBe('CHORUS_ERR_BACKPRESSURE_TIMEOUT');
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
    expect(writer.usedBytes).toBe(used);
  });

  it('read() resolves when a frame arrives and returns null at its deadline', async () => {
    const writer = create(1024);
    const reader = attach(writer.name);
    const deadline = Date.now() + 60;
    expect(await reader.read(deadline)).toBeNull();
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);

    const pending = reader.read(Date.now() + 10_000);
    setTimeout(() => writer.tryWrite(Buffer.from('late')), 5);
    expect((await pending)?.toString()).toBe('late');
  });

  it('a second concurrent read() is refused: the ring has one consumer', async () => {
    const ring = create(1024);
    const first = ring.read(Date.now() + 10_000);
    expect(await codeOf(ring.read(Date.now() + 10_000))).toBe('CHORUS_ERR_SHM');
    ring.tryWrite(Buffer.from('x'));
    expect((await first)?.toString()).toBe('x');
  });

  it('close() rejects pending read and write with CONNECTOR_CLOSED and is idempotent', async () => {
    const reader = create(128);
    const writer = attach(reader.name);
    const read = codeOf(reader.read(Date.now() + 10_000));
    while (writer.tryWrite(Buffer.alloc(24))) continue;
    const write = codeOf(writer.write(Buffer.alloc(24), Date.now() + 10_000));
    // The reader must not drain the ring: close it first, then the writer.
    reader.close();
    reader.close();
    expect(await read).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    writer.close();
    expect(await write).toBe('CHORUS_ERR_CONNECTOR_CLOSED');
    expect(() => reader.tryRead()).toThrow(expect.objectContaining({ code: 'CHORUS_ERR_CONNECTOR_CLOSED' }));
  });

  it('keeps the event loop turning while a read() is pending', async () => {
    const ring = create(1024);
    let turns = 0;
    let done = false;
    const spin = (): void => {
      turns++;
      if (!done) setImmediate(spin);
    };
    setImmediate(spin);
    const started = Date.now();
    const frame = await ring.read(started + 150);
    done = true;
    expect(frame).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    // A blocking wait on the JS thread would allow ~0 turns; a free loop manages thousands in 150 ms.
    expect(turns).toBeGreaterThan(500);
  });

  it('creates the segment and its doorbell with mode 0600 and leaves nothing in /dev/shm after close + unlink', () => {
    const ring = ShmRing.create({ capacityBytes: 4096 });
    const file = `/dev/shm${ring.name}`;
    const bell = `${file}.bell`;
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(file).size).toBe(4096 + 4096);
    expect(statSync(bell).isFIFO()).toBe(true);
    expect(statSync(bell).mode & 0o777).toBe(0o600);
    ring.close();
    expect(existsSync(file)).toBe(true); // close unmaps; only unlink removes the name
    expect(ring.unlink()).toBe(true);
    expect(existsSync(file)).toBe(false);
    expect(existsSync(bell)).toBe(false);
    expect(ring.unlink()).toBe(false);
  });

  it('one wait ends for a burst of frames; a bell left from an earlier wait only costs a re-check', async () => {
    const writer = create(1024);
    const reader = attach(writer.name);
    const pending = reader.read(Date.now() + 10_000);
    for (const s of ['a', 'b', 'c']) writer.tryWrite(Buffer.from(s)); // rings once: the first write disarms
    expect((await pending)?.toString()).toBe('a');
    expect((await reader.read(Date.now() + 10_000))?.toString()).toBe('b');
    expect((await reader.read(Date.now() + 10_000))?.toString()).toBe('c');
    // Empty now: the next read waits for its own frame, then for its deadline.
    const late = reader.read(Date.now() + 10_000);
    setTimeout(() => writer.tryWrite(Buffer.from('d')), 5);
    expect((await late)?.toString()).toBe('d');
    const deadline = Date.now() + 40;
    expect(await reader.read(deadline)).toBeNull();
    expect(Date.now()).toBeGreaterThanOrEqual(deadline);
  });

  it('attach to a missing segment fails with CHORUS_ERR_SHM and a hint', () => {
    expect(() => ShmRing.attach(`/chorus-${process.pid}-0000000000000000`)).toThrow(
      expect.objectContaining({
        code: 'CHORUS_ERR_SHM',
        message: expect.stringMatching(/not created it yet|unlinked/),
      }),
    );
  });
});
