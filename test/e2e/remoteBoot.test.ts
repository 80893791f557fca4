/**
 * Main's side of a remote instance joining (src/control/Membership.ts, over Redis): pub/sub keeps nothing, so a boot
 * published before the instance listens is lost; main says it again on a later heartbeat until the instance answers
 * READY. (Heartbeats come from a connection of their own, which may be back before the instance has subscribed again
 * after an outage.)
 */
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { logger } from '../../src/common/log.ts';
import { claimLease, newLease } from '../../src/control/InstanceLease.ts';
import { Membership } from '../../src/control/Membership.ts';
import type { RemoteStageHandle } from '../../src/control/RemoteStageHandle.ts';
import { controlKeys, redisControlLink } from '../helpers/redisControl.ts';
import { decodeControl, packControl, type Heartbeat } from '../../src/control/wire.ts';
import type { MainToStage, StageReadySettings } from '../../src/worker/messages.ts';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const TWO_HOST = join(import.meta.dirname, '..', '..', 'configs', 'two-host.yaml');

const READY_SETTINGS: StageReadySettings = {
  stageId: 'talker',
  replica: 0,
  pid: process.pid,
  threads: 1,
  modelFiles: [],
  loadMs: 0,
  facts: { kind: 'talker', conditionDim: 8, numCodebooks: 4, framesPerToken: 2, kvBytesPerToken: 64 },
};

describe('a remote instance that missed its boot', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await RedisServer.start();
  });
  afterAll(() => server?.stop());

  it('gets it again on a later heartbeat, and joins when it answers READY', async () => {
    const graph = await loadConfig(TWO_HOST);
    const mainLink = await RedisLink.connect({ url: server.url });
    const plane = redisControlLink(mainLink, 'boot-test');
    const remote = new Membership(
      plane,
      graph,
      graph.configHash ?? '',
      () => [],
      () => [],
      logger,
    );
    await remote.start();
    const instanceLink = await RedisLink.connect({ url: server.url });
    const keys = controlKeys('boot-test');
    const instance = 'talker#late';
    // The instance's name lease, as chorus stage takes it: main admits heartbeats only under the lease held.
    const lease = newLease(instance);
    expect(await claimLease(redisControlLink(instanceLink, 'boot-test'), lease)).toEqual({ held: true });
    const heartbeat: Heartbeat = {
      instance,
      stageId: 'talker',
      host: hostname(),
      pid: process.pid,
      configHash: graph.configHash ?? '',
      startedAtMs: Date.now(),
      lease: lease.value,
    };
    const publishes = async () =>
      Number(/cmdstat_publish:calls=(\d+)/.exec(await server.cli('info', 'commandstats'))?.[1] ?? 0);
    try {
      // The first beat, answered with a boot while nobody listens on the instance's channel.
      const before = await publishes();
      await instanceLink.commands.publish(keys.heartbeat, packControl('heartbeat', heartbeat));
      await expect.poll(publishes, { timeout: 10_000 }).toBeGreaterThanOrEqual(before + 2);

      const boots: MainToStage[] = [];
      await instanceLink.subscribe(keys.toInstance(instance), (b) => {
        const decoded = decodeControl('to_instance', b);
        if (decoded.ok && decoded.body.type !== 'refused') boots.push(decoded.body);
      });
      const joined = new Promise<RemoteStageHandle>((resolve) => remote.once('joined', resolve));
      const beats = setInterval(
        () =>
          void instanceLink.commands
            .publish(keys.heartbeat, packControl('heartbeat', heartbeat))
            .catch(() => undefined),
        100,
      );
      try {
        await expect.poll(() => boots.map((m) => m.type), { timeout: 10_000 }).toContain('boot');
        const boot = boots.find((m) => m.type === 'boot') as Extract<MainToStage, { type: 'boot' }>;
        expect([boot.instance, boot.graph.stages[boot.stageIndex].stageId]).toEqual([instance, 'talker']);
        await instanceLink.commands.publish(
          keys.toMain,
          packControl('to_main', {
            from: instance,
            lease: lease.value,
            msg: { type: 'ready', settings: READY_SETTINGS },
          }),
        );
        expect((await joined).heartbeat.instance).toBe(instance);
        // Joined: no more boots, however long it beats.
        const bootsAtJoin = boots.length;
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        expect(boots.length).toBe(bootsAtJoin);
      } finally {
        clearInterval(beats);
      }
    } finally {
      await remote.close();
      await instanceLink.close();
    }
  });
});
