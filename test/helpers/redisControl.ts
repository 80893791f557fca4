/**
 * The Redis control plane (src/control/redis/RedisControl.ts) over a RedisLink a test holds itself: its key layout by
 * name, and an instance's channel on it.
 */
import type { ControlLink } from '../../src/control/ControlLink.ts';
import { InstanceChannel } from '../../src/control/InstanceChannel.ts';
import { redisControlKey, redisControlLink } from '../../src/control/redis/RedisControl.ts';
import type { MainToStage } from '../../src/worker/messages.ts';
import type { RedisLink } from '../../transport/redis/redisLink.ts';

export { redisControlLink };

/** The plane's keys and channels under `prefix`. */
export function controlKeys(prefix: string) {
  return {
    toMain: redisControlKey(prefix, { kind: 'to_main' }),
    toInstance: (instance: string) => redisControlKey(prefix, { kind: 'to_instance', instance }),
    heartbeat: redisControlKey(prefix, { kind: 'heartbeat' }),
    deployment: redisControlKey(prefix, { kind: 'deployment' }),
    lease: (instance: string) => redisControlKey(prefix, { kind: 'lease', instance }),
  };
}

export interface TestChannelOptions {
  readonly stageId?: string;
  readonly configHash?: string;
  readonly localBoot?: (boot: Extract<MainToStage, { type: 'boot' }>) => MainToStage;
  readonly onRefused?: (reason: string) => void;
}

/** An instance's end on `link` under `prefix` (its heartbeat thread connects on its own, as `chorus stage`'s does). */
export function redisInstanceChannel(
  link: RedisLink,
  prefix: string,
  instance: string,
  options: TestChannelOptions = {},
): InstanceChannel {
  const control: ControlLink = redisControlLink(link, prefix);
  return new InstanceChannel(
    control,
    { kind: 'redis', options: { ...link.options, keyPrefix: prefix } },
    instance,
    options.stageId ?? 'talker',
    options.configHash ?? 'hash',
    options.localBoot ?? ((boot) => boot),
    options.onRefused ?? (() => undefined),
  );
}
