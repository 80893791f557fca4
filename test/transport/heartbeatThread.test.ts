/**
 * A remote stage's heartbeat (src/control/heartbeatWorker.ts): it keeps beating while the step thread is held
 * by a model step longer than main's heartbeat TTL, and stops, its thread gone, when the channel closes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS } from '../../src/control/HeartbeatThread.ts';
import { redisInstanceChannel } from '../helpers/redisControl.ts';
import { RedisServer } from '../helpers/redisServer.ts';

/** Holds this thread as a model step does: synchronously, no event loop turn. */
function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spinning on purpose
  }
}

describe('remote stage heartbeat', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());

  /** PUBLISH commands the server has run (INFO commandstats): the beats, here. */
  const publishes = async () =>
    Number(/cmdstat_publish:calls=(\d+)/.exec(await server.cli('info', 'commandstats'))?.[1] ?? 0);

  it('beats while a step holds the step thread past the TTL, and stops when the channel closes', async () => {
    const link = await RedisLink.connect({ url: server.url });
    const channel = redisInstanceChannel(link, 'hbtest', 'talker#x', { configHash: 'config-hash' });
    await channel.start();
    const before = await publishes();
    busyWait(HEARTBEAT_TTL_MS + 600); // a step longer than main waits for a beat
    const during = (await publishes()) - before;
    expect(during).toBeGreaterThanOrEqual(Math.floor(HEARTBEAT_TTL_MS / HEARTBEAT_MS));

    expect(await server.cli('client', 'list')).toContain('talker#x:heartbeat'); // its own connection
    const closed = new Promise<void>((resolve) => channel.onClose(resolve));
    channel.close();
    await closed; // after the heartbeat thread has closed its connection and exited
    const atClose = await publishes();
    expect(await server.cli('client', 'list')).not.toContain('talker#x:heartbeat');
    busyWait(3 * HEARTBEAT_MS);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await publishes()).toBe(atClose);
    await link.close();
  });
});
