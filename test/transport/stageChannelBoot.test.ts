/**
 * A remote instance's control channel (src/control/InstanceChannel.ts, over Redis) and main's boots: the first boot
 * starts the stage, a repeat of it (the same bootId: main did not hear READY) is answered with READY again and nothing
 * else, and a boot with another id (a main that lost the instance, or a new main) first has the stage drop every
 * request it holds, then READY again. Garbage on the instance's channel changes nothing (it used to break the
 * subscription: a stage that beat on and answered nothing); a deployment of another protocol version is refused at
 * start, naming both versions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { controlKeys, redisInstanceChannel } from '../helpers/redisControl.ts';
import { Packr } from 'msgpackr';
import { ErrorCodes } from '../../src/common/errors.ts';
import { CONTROL_PROTOCOL_VERSION, decodeControl, packControl } from '../../src/control/wire.ts';
import type { MainToStage, StageReadySettings, StageToMain } from '../../src/worker/messages.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const READY_SETTINGS: StageReadySettings = {
  stageId: 'talker',
  replica: 0,
  pid: process.pid,
  threads: 1,
  modelFiles: [],
  loadMs: 0,
  facts: { kind: 'talker', conditionDim: 8, numCodebooks: 4, framesPerToken: 2, kvBytesPerToken: 64 },
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
    const channel = redisInstanceChannel(stageLink, 'boots', 'talker#x');
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

  it('after garbage on its channel, still boots and answers', async () => {
    const keys = controlKeys('garbage');
    const [stageLink, mainLink] = await Promise.all([
      RedisLink.connect({ url: server.url }),
      RedisLink.connect({ url: server.url }),
    ]);
    const channel = redisInstanceChannel(stageLink, 'garbage', 'talker#y');
    const atStage: MainToStage[] = [];
    channel.onMessage((m) => atStage.push(m));
    await channel.start();
    try {
      const own = keys.toInstance('talker#y');
      for (const junk of ['garbage', '\x92\xd4', '']) await mainLink.commands.publish(own, junk);
      await mainLink.commands.publish(own, new Packr().pack({ type: 'shutdown', drainMs: 0 })); // no version
      const boot = { type: 'boot', graph: {} as never, stageIndex: 0, replica: 0, edges: [], bootId: 'b' } as const;
      await mainLink.commands.publish(own, packControl('to_instance', boot));
      await expect.poll(() => atStage.map((m) => m.type)).toEqual(['boot']);
      expect(stageLink.up).toBe(true);
    } finally {
      const closed = new Promise<void>((resolve) => channel.onClose(resolve));
      channel.close();
      await closed;
      await Promise.all([stageLink.close(), mainLink.close()]);
    }
  });

  it('refuses to start against a deployment of another protocol version, naming both', async () => {
    const link = await RedisLink.connect({ url: server.url });
    const start = () => redisInstanceChannel(link, 'versions', 'talker#z').start();
    const record = { configHash: 'hash', host: 'hosta', pid: 1 };
    try {
      const next = CONTROL_PROTOCOL_VERSION + 1;
      await link.commands.set('versions:deployment', new Packr().pack({ v: next, ch: 'deployment', body: record }));
      await expect(start()).rejects.toMatchObject({
        code: ErrorCodes.CONTROL_PROTOCOL,
        message: expect.stringMatching(
          new RegExp(`version ${next} .*this process speaks version ${CONTROL_PROTOCOL_VERSION}.*same Chorus version`),
        ),
      });
      await link.commands.set('versions:deployment', new Packr().pack(record)); // a main from before versions
      await expect(start()).rejects.toMatchObject({
        message: expect.stringMatching(/version 0 \(a Chorus from before/),
      });
      expect(await server.keys()).toEqual(['versions:deployment']); // refused before it took its name
    } finally {
      await link.commands.del('versions:deployment');
      await link.close();
    }
  });
});
