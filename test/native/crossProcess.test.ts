import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { ShmRing } from '../../transport/shm/ShmRing.ts';
import { producedFrame, type PeerReply } from './fixtures/peerProtocol.ts';
import { endPeersAndRings, ring, startPeer } from './fixtures/peers.ts';

afterEach(endPeersAndRings);

describe('ShmRing across processes', () => {
  it('ping-pongs frames with a child process (doorbell wake-ups both ways)', async () => {
    const toChild = ring(64 * 1024);
    const fromChild = ring(64 * 1024);
    const { child } = await startPeer({ mode: 'echo', inName: toChild.name, outName: fromChild.name });
    for (let i = 0; i < 200; i++) {
      const ping = producedFrame(i);
      // Alternate a split (header + payload) write with a plain one.
      if (i % 2) await toChild.write([ping.subarray(0, 4), ping.subarray(4)], Date.now() + 10_000);
      else await toChild.write(ping, Date.now() + 10_000);
      const pong = await fromChild.read(Date.now() + 10_000);
      expect(pong?.equals(ping)).toBe(true);
    }
    await toChild.write(Buffer.alloc(0), Date.now() + 10_000); // tells the echo to stop
    const [code] = await once(child, 'exit');
    expect(code).toBe(0);
  });

  it('receives 1000 frames in order from a backpressured producer', async () => {
    // 8 KiB ring, frames up to 3 KiB: the producer blocks on a full ring over and over.
    const inbound = ring(8 * 1024);
    const { child } = await startPeer({ mode: 'produce', outName: inbound.name, count: 1000 });
    const done = once(child, 'message');
    for (let seq = 0; seq < 1000; seq++) {
      const frame = await inbound.read(Date.now() + 10_000);
      expect(frame?.readUInt32LE(0)).toBe(seq);
      expect(frame?.equals(producedFrame(seq))).toBe(true);
    }
    expect((await done)[0] as PeerReply).toEqual({ done: true });
    expect(inbound.tryRead()).toBeNull();
  });

  it('sweepStaleSegments unlinks the segment (and doorbell) of a dead owner and keeps live ones', async () => {
    const mine = ring(4096);
    const { child, reply } = await startPeer({ mode: 'own', capacityBytes: 4096 });
    const orphan = (reply as { owned: string }).owned;
    expect(orphan).toMatch(new RegExp(`^/chorus-${child.pid}-[0-9a-f]{16}$`));
    expect(ShmRing.sweepStaleSegments()).not.toContain(orphan); // owner alive: kept
    child.kill('SIGKILL'); // a crash: nobody unlinks
    await once(child, 'exit');
    expect(existsSync(`/dev/shm${orphan}`)).toBe(true);
    expect(ShmRing.sweepStaleSegments()).toContain(orphan);
    expect(existsSync(`/dev/shm${orphan}`)).toBe(false);
    expect(existsSync(`/dev/shm${orphan}.bell`)).toBe(false);
    expect(existsSync(`/dev/shm${mine.name}.bell`)).toBe(true);
    expect(existsSync(`/dev/shm${mine.name}`)).toBe(true);
  });
});
