/**
 * A chunk's wait (transport/KeyedMailbox.ts get, onDeadline): a frame that reached the consumer's socket before the
 * deadline is handed over, even when the process was too busy to read it before the deadline's timer came due
 * (timers run before the poll that reads sockets). The timeout itself: test/native/KeyedMailbox.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { chunkKey } from '../../transport/Connector.ts';
import { KeyedMailbox } from '../../transport/KeyedMailbox.ts';
import { afterPoll, busyFor, socketPair } from '../helpers/loopStall.ts';

const WAIT_MS = 50;
const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

describe('a chunk wait after a stall', () => {
  it('gets the frame that waited in the socket while its deadline came due', async () => {
    const { server, client, close } = await socketPair();
    closers.push(close);
    const box = new KeyedMailbox('talker->code2wav');
    const key = chunkKey('req1', 'talker', 0);
    server.on('data', (frame: Buffer) => box.deliver(key, new Uint8Array(frame)));
    await afterPoll(); // from the check phase: the timers run next, then the poll
    const got = box.get(key, Date.now() + WAIT_MS);
    client.write(Buffer.from([1, 2, 3])); // the frame reached the consumer in time...
    busyFor(WAIT_MS * 1.5); // ...while it stalled past the deadline: its timer runs before the socket is read
    expect(await got).toEqual(new Uint8Array([1, 2, 3]));
  });
});
