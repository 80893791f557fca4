/**
 * Membership (src/control/Membership.ts): a remote instance whose heartbeat reached main's socket in time stays, even
 * when main was too busy to read it before the heartbeat timer came due (timers run before the poll that reads
 * sockets); one that stays silent is still lost. Main's clock is moved past the heartbeat TTL (a fake Date) instead of
 * stalling the test for the whole TTL: what is under test is the order of the timer and the read after a stall.
 */
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS } from '../../src/control/HeartbeatThread.ts';
import { afterPoll, busyFor, socketPair } from '../helpers/loopStall.ts';
import { remoteStagesHarness } from '../helpers/remoteStagesHarness.ts';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0)) await close();
});

async function joinedInstance() {
  const remote = await remoteStagesHarness('talker#s1', 'talker');
  closers.push(() => remote.close());
  vi.useFakeTimers({ toFake: ['Date'] }); // main's clock, moved by the test; its timers stay real
  return remote;
}

describe('Membership after a stall', () => {
  it('keeps an instance whose heartbeat waited in the socket while the heartbeat timer came due', async () => {
    const { server, client, close } = await socketPair();
    closers.push(close);
    const remote = await joinedInstance();
    const read = new Promise<void>((resolve) => server.on('data', () => (remote.beat(), resolve())));
    await afterPoll(); // from the check phase: the timers run next, then the poll
    vi.setSystemTime(Date.now() + HEARTBEAT_TTL_MS + 1000); // main stalled past the TTL...
    client.write('beat'); // ...while the instance's beat reached main's socket
    busyFor(HEARTBEAT_MS); // past the heartbeat timer's period: it runs before the socket is read
    await read;
    await afterPoll();
    await afterPoll();
    expect(remote.handle.lost).toBeNull();
  });

  it('loses an instance that is still silent after the poll', async () => {
    const remote = await joinedInstance();
    const died = once(remote.handle, 'died');
    vi.setSystemTime(Date.now() + HEARTBEAT_TTL_MS + 1000);
    await died; // the next heartbeat timer
    expect(remote.handle.lost?.message).toMatch(/sent no heartbeat for 3\d{3} ms/);
  });
});
