/**
 * Instance names owned by a lease in Redis (src/control/InstanceLease.ts over redis/RedisControl.ts), against a real
 * redis-server: a free name is taken, a name whose holder renews is refused, a dead holder's name is taken once its
 * lease lapses, only the holder ends its lease; and through a remote stage's channel: a second channel under a live
 * name fails to start, an instance whose lease was taken over stops (fenced), a clean close leaves no key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import type { ControlLink } from '../../src/control/ControlLink.ts';
import { acquireLease, claimLease, LEASE_TTL_MS, newLease, releaseLease } from '../../src/control/InstanceLease.ts';
import { RedisLink } from '../../transport/redis/redisLink.ts';
import { controlKeys, redisControlLink, redisInstanceChannel } from '../helpers/redisControl.ts';
import { RedisServer } from '../helpers/redisServer.ts';

describe('instance name leases', () => {
  let server: RedisServer;
  let link: RedisLink;
  /** The plane under a test's prefix, over the one link. */
  const plane = (prefix: string): ControlLink => redisControlLink(link, prefix);
  beforeAll(async () => {
    server = await RedisServer.start();
    link = await RedisLink.connect({ url: server.url });
  });
  afterAll(async () => {
    await link?.close();
    await server?.stop();
  });

  const pttl = async (key: string) => Number((await server.cli('pttl', key)).trim());

  it('takes a free name, refuses one whose holder renews, takes a dead holder’s once it lapses', async () => {
    const ctl = plane('lease1');
    const key = controlKeys('lease1').lease('talker#a');
    const holder = newLease('talker#a');
    await acquireLease(ctl, holder);
    expect(await pttl(key)).toBeGreaterThan(0);
    expect(await pttl(key)).toBeLessThanOrEqual(LEASE_TTL_MS);

    // A live holder: it renews, as its heartbeat thread does.
    const renewing = setInterval(() => void claimLease(ctl, holder), 100);
    const second = newLease('talker#a');
    try {
      const refused = await acquireLease(ctl, second).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: ErrorCodes.INSTANCE_NAME_TAKEN });
      expect((refused as Error).message).toMatch(
        new RegExp(`talker#a is held by a live stage \\(host .+, pid ${process.pid}\\).*another --name`),
      );
    } finally {
      clearInterval(renewing);
    }
    // The holder is dead now (no more renewals): the name is the second's once the lease lapses.
    await acquireLease(ctl, second);
    expect((await link.commands.get(key))?.toString()).toBe(second.value);

    await releaseLease(ctl, holder); // not the holder any more: nothing happens
    expect((await link.commands.get(key))?.toString()).toBe(second.value);
    await releaseLease(ctl, second);
    expect(await link.commands.get(key)).toBeNull();
  }, 30_000);

  it('a key without a TTL is not a lease: refused at once, naming the key', async () => {
    const key = controlKeys('lease2').lease('talker#b');
    await link.commands.set(key, 'by hand');
    const refused = await acquireLease(plane('lease2'), newLease('talker#b')).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: ErrorCodes.INSTANCE_NAME_TAKEN });
    expect((refused as Error).message).toContain(`the key ${key} has no TTL`);
    await link.commands.del(key);
  });

  it('stage channel: a duplicate fails to start, a fenced one stops, a clean close leaves no key', async () => {
    const channel = (onRefused: (reason: string) => void = () => undefined) =>
      redisInstanceChannel(link, 'lease3', 'talker#c', { onRefused });
    let refusedWith: string | null = null;
    const first = channel((reason) => (refusedWith = reason));
    await first.start();
    const duplicate = channel();
    await expect(duplicate.start()).rejects.toMatchObject({ code: ErrorCodes.INSTANCE_NAME_TAKEN });

    // Another process takes the name over (as after a partition longer than the lease): the first learns it on its
    // next renewal, stops beating and is refused; its close does not delete the new holder's lease.
    const key = controlKeys('lease3').lease('talker#c');
    const usurper = 'usurper-token elsewhere 4242';
    await link.commands.set(key, usurper, { PX: LEASE_TTL_MS });
    await expect
      .poll(() => refusedWith, { timeout: 5_000 })
      .toMatch(/CHORUS_ERR_INSTANCE_NAME_TAKEN.*host elsewhere, pid 4242/);
    const closed = new Promise<void>((resolve) => first.onClose(resolve));
    first.close();
    await closed;
    expect((await link.commands.get(key))?.toString()).toBe(usurper);
    await link.commands.del(key);

    // A clean start and close: the lease is there while it runs, gone after.
    const clean = channel();
    await clean.start();
    expect(await server.keys()).toEqual([key]);
    const cleanClosed = new Promise<void>((resolve) => clean.onClose(resolve));
    clean.close();
    await cleanClosed;
    expect(await server.keys()).toEqual([]);
  }, 30_000);
});
