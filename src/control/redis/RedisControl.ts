/**
 * The control plane over Redis (ControlLink.ts says what an engine provides), on the deployment's key prefix:
 *
 *   `{prefix}:ctl:main`         pub/sub: instances -> main, {from: instance, lease, msg}
 *   `{prefix}:ctl:{instance}`   pub/sub: main -> one instance
 *   `{prefix}:hb`               pub/sub: every instance's heartbeat
 *   `{prefix}:deployment`       a key with a TTL: main's config hash, refreshed while main runs
 *   `{prefix}:lease:{instance}` a key with a TTL: the instance's name lease, `{token} {host} {pid}`
 *
 * The layout is what docs/scale-out-security.md grants each Redis user: keep them in step. A lease is claimed and
 * released by a Lua script each, so check-and-set and compare-and-delete are atomic (a Cluster routes a script by its
 * one key).
 */
import { redactUrl, RedisLink } from '../../../transport/redis/redisLink.ts';
import { listKey } from '../../../transport/redis/layout.ts';
import type { RedisConnectorOptions } from '../../../transport/redis/RedisConnector.ts';
import type {
  Claim,
  ConnectorOptions,
  ControlAt,
  ControlChannelAt,
  ControlEngine,
  ControlLink,
} from '../ControlLink.ts';

/** Takes the lease when free or ours (and renews it); else returns the holder and its TTL (-1: none, -2: gone). */
const CLAIM_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
return {0, current, redis.call('PTTL', KEYS[1])}`;

/** Deletes the lease only while it is ours. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export function redisControlKey(prefix: string, at: ControlAt): string {
  switch (at.kind) {
    case 'to_main':
      return `${prefix}:ctl:main`;
    case 'to_instance':
      return `${prefix}:ctl:${at.instance}`;
    case 'heartbeat':
      return `${prefix}:hb`;
    case 'deployment':
      return `${prefix}:deployment`;
    case 'lease':
      return `${prefix}:lease:${at.instance}`;
  }
}

class RedisControlLink implements ControlLink {
  constructor(
    private readonly link: RedisLink,
    private readonly prefix: string,
  ) {}

  get up(): boolean {
    return this.link.up;
  }

  get where(): string {
    return `Redis at ${redactUrl(this.link.options.url)}`;
  }

  nameOf(at: ControlAt): string {
    return redisControlKey(this.prefix, at);
  }

  subscribe(at: ControlChannelAt, onBytes: (bytes: Buffer) => void): Promise<void> {
    return this.link.subscribe(this.nameOf(at), onBytes);
  }

  unsubscribe(at: ControlChannelAt): Promise<void> {
    return this.link.unsubscribe(this.nameOf(at));
  }

  async publish(at: ControlChannelAt, bytes: Uint8Array): Promise<void> {
    await this.link.commands.publish(this.nameOf(at), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  readDeployment(): Promise<Buffer | null> {
    return this.link.commands.get(this.nameOf({ kind: 'deployment' }));
  }

  async writeDeployment(bytes: Uint8Array, ttlMs: number): Promise<void> {
    const value = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    await this.link.commands.set(this.nameOf({ kind: 'deployment' }), value, { PX: ttlMs });
  }

  async deleteDeployment(): Promise<void> {
    await this.link.commands.del(this.nameOf({ kind: 'deployment' }));
  }

  async claimLease(instance: string, value: string, ttlMs: number): Promise<Claim> {
    const reply = (await this.link.commands.eval(CLAIM_SCRIPT, {
      keys: [this.nameOf({ kind: 'lease', instance })],
      arguments: [value, String(ttlMs)],
    })) as [number, (Buffer | string)?, number?];
    if (reply[0] === 1) return { held: true };
    return { held: false, holder: String(reply[1]), ttlMs: Number(reply[2]) };
  }

  async leaseHolder(instance: string): Promise<string | null> {
    return (await this.link.commands.get(this.nameOf({ kind: 'lease', instance })))?.toString() ?? null;
  }

  async releaseLease(instance: string, value: string): Promise<void> {
    await this.link.commands.eval(RELEASE_SCRIPT, {
      keys: [this.nameOf({ kind: 'lease', instance })],
      arguments: [value],
    });
  }

  /** One DEL per run: a run's lists share a Cluster slot. An edge on another Redis keeps its TTL. */
  dropInbox(instance: string, runIds: readonly string[], connectors: readonly ConnectorOptions[]): void {
    if (!this.link.up) return;
    const prefixes = new Set<string>();
    for (const c of connectors as unknown as readonly RedisConnectorOptions[])
      if (c.url === this.link.options.url) prefixes.add(c.keyPrefix);
    if (prefixes.size === 0) return;
    for (const runId of runIds) {
      const keys = [...prefixes].map((prefix) => listKey(prefix, runId, instance));
      this.link.commands.del(keys).catch(() => undefined); // best effort: the lists' TTL still bounds them
    }
  }

  onDown(handler: (err: Error) => void): void {
    this.link.onDown(handler);
  }

  onReconnect(handler: () => void): void {
    this.link.onReconnect(handler);
  }

  unavailable(cause: unknown) {
    return this.link.unavailable(cause);
  }

  close(): Promise<void> {
    return this.link.close();
  }
}

export const redisControl: ControlEngine = {
  async connect(options: ConnectorOptions, name: string): Promise<ControlLink> {
    const redis = options as unknown as RedisConnectorOptions;
    const link = await RedisLink.connect({ ...redis, name });
    return new RedisControlLink(link, redis.keyPrefix);
  },
};

/** A ControlLink over a link that is open already (tests that hold the RedisLink themselves). */
export function redisControlLink(link: RedisLink, prefix: string): ControlLink {
  return new RedisControlLink(link, prefix);
}
