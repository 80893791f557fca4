/**
 * A remote instance's control channel (src/worker/control/redisChannel.ts) and main's boots: the first boot starts
 * the stage, a repeat of it (the same bootId: main did not hear READY) is answered with READY again and nothing
 * else, and a boot with another id (a main that lost the instance, or a new main) first has the stage drop every
 * request it holds, then READY again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { controlKeys, RedisStageChannel } from '../../src/worker/control/redisChannel.ts';
import { decodeControl, packControl } from '../../src/worker/control/wire.ts';
import type { MainToStage, StageToMain } from '../../src/worker/messages.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const READY_SETTINGS = {
  stageId: 'talker',
  replica: 0,
  pid: process.pid,
  threads: 1,
  modelFiles: [],
  loadMs: 0,
  facts: {} as never,
};

describe('remote stage channel and boots', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());

  it('starts on the first boot, answers its repeats with READY, and drops what it holds on a new boot', async () => {
    const keys = controlKeys('boots');
    const [stageLink, mainLink] = await Promise.all([
      RedisLink.connect({ url: server.url }),
      RedisLink.connect({ url: server.url }),
    ]);
    const channel = new RedisStageChannel(
      stageLink,
      'boots',
      'talker#x',
      'talker',
      'hash',
      (b) => b,
      () => {},
    );
    const atStage: MainToStage[] = [];
    channel.onMessage((m) => atStage.push(m));
    const atMain: StageToMain[] = [];
    await mainLink.subscribe(keys.toMain, (b) => {
      const decoded = decodeControl('to_main', b);
      if (decoded.ok) atMain.push(decoded.body.msg);
    });
    await channel.start();
    const boot = (bootId: string) =>
      mainLink.commands.publish(
        keys.toInstance('talker#x'),
        packControl('to_instance', { type: 'boot', graph: {} as never, stageIndex: 0, replica: 0, edges: [], bootId }),
      );
    const readies = () => atMain.filter((m) => m.type === 'ready').length;
    try {
      await boot('first');
      await expect.poll(() => atStage.map((m) => m.type)).toEqual(['boot']);
      expect(channel.booted).toBe(true);
      channel.send({ type: 'ready', settings: READY_SETTINGS });
      await expect.poll(readies).toBe(1);

      await boot('first'); // main repeats its boot: READY again, nothing for the stage
      await expect.poll(readies).toBe(2);
      expect(atStage.map((m) => m.type)).toEqual(['boot']);

      await boot('second'); // booted anew: drop everything, then READY
      await expect.poll(readies).toBe(3);
      expect(atStage.map((m) => m.type)).toEqual(['boot', 'drop_all']);
      await boot('second');
      await expect.poll(readies).toBe(4);
      expect(atStage.map((m) => m.type)).toEqual(['boot', 'drop_all']);
    } finally {
      const closed = new Promise<void>((resolve) => channel.onClose(resolve));
      channel.close();
      await closed;
      await Promise.all([stageLink.close(), mainLink.close()]);
    }
  });
});
