/**
 * IdleWatch: a session's event that reached the socket in time keeps it open, even when the process was too busy to
 * read it before the idle timer came due (timers run before the poll that reads sockets).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { IdleWatch } from '../../src/server/realtime/IdleWatch.ts';
import { busyFor, socketPair } from '../helpers/loopStall.ts';

const closers: (() => void)[] = [];
afterEach(() => closers.splice(0).forEach((close) => close()));

describe('IdleWatch', () => {
  it('keeps a session whose event arrived during a stall past the deadline, then closes it idle', async () => {
    const { server, client, close } = await socketPair();
    closers.push(close);
    let idleAt: number | null = null;
    const closed = new Promise<void>((resolve) => {
      const watch = new IdleWatch(
        50,
        () => false,
        () => ((idleAt = performance.now()), resolve()),
      );
      closers.push(() => watch.stop());
      server.on('data', () => watch.touch());
    });
    const lastEvent = new Promise<number>((resolve) => server.once('data', () => resolve(performance.now())));
    busyFor(30);
    client.write('x'); // in the server socket's buffer 30 ms in: within the 50 ms
    busyFor(70); // read only after the idle timer came due
    const readAt = await lastEvent;
    expect(idleAt).toBeNull(); // the event was read first: not idle
    await closed;
    expect(idleAt! - readAt).toBeGreaterThanOrEqual(49); // idle 50 ms after that event
  });

  it('closes nothing once stopped', async () => {
    let fired = false;
    const watch = new IdleWatch(
      10,
      () => false,
      () => (fired = true),
    );
    watch.stop();
    const later = new Promise<void>((resolve) => setTimeout(resolve, 30)); // past its deadline (the thing under test)
    await later;
    expect(fired).toBe(false);
  });
});
