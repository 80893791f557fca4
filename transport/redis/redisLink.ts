/**
 * One process's link to the deployment's Redis: a command connection (a single node, or a Cluster that routes each
 * key to its shard) and a subscriber for pub/sub. Binary-safe: replies come back as Buffers, never decoded as text.
 *
 * Liveness: commands are refused at once while the link is down (no offline queue: a frame queued for a Redis that
 * may never return would hold its request past any deadline); node-redis reconnects with backoff and resubscribes,
 * and `onReconnect` listeners learn that messages may have been lost meanwhile.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { bufferTypeMapping, redisPackage } from './redisPackage.ts';

/** The Redis settings a connector, a stage or main share (the connector's resolved options). */
export interface RedisLinkOptions {
  /** `redis://`, `rediss://` (TLS) or `redis+cluster://host:port,host:port` (a Cluster). */
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
  /** Client name shown by CLIENT LIST (the instance). */
  readonly name?: string;
}

const MAX_BACKOFF_MS = 2000;

/** Exponential backoff between reconnect attempts, capped at 2 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(50 * 2 ** attempt, MAX_BACKOFF_MS);
}

/** Backoff once the link has been up; before that a failure is final (connect() rejects, saying why). */
function reconnectStrategy(hasBeenUp: () => boolean) {
  return (retries: number, cause: Error): number | Error => (hasBeenUp() ? reconnectDelayMs(retries) : cause);
}

/** What the connector and the control plane use of a link (the same for one node and a Cluster). */
export interface RedisCommands {
  rPush(key: string, element: Buffer): Promise<number>;
  pExpire(key: string, ms: number): Promise<number>;
  lPopCount(key: string, count: number): Promise<Buffer[] | null>;
  del(key: string | string[]): Promise<number>;
  publish(channel: string, message: Buffer | string): Promise<number>;
  set(key: string, value: Buffer | string, options?: { PX?: number }): Promise<unknown>;
  get(key: string): Promise<Buffer | null>;
  /** A Lua script on `keys` (a Cluster routes it by the first key): the control plane's name leases. */
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

export class RedisLink {
  readonly #onReconnect = new Set<() => void>();
  readonly #onDown = new Set<(err: Error) => void>();
  #up = false;
  #closed = false;
  // The connections whose last word was 'ready' (not 'error'), out of the #watched ones.
  readonly #ready = new Set<unknown>();
  #watched = 0;

  private constructor(
    readonly options: RedisLinkOptions,
    readonly commands: RedisCommands,
    private readonly subscriber: {
      subscribe(channel: string, listener: (message: Buffer, channel: Buffer) => void, bufferMode: true): Promise<void>;
      unsubscribe(channel: string): Promise<void>;
    },
    private readonly clients: readonly {
      on(event: string, fn: (...args: never[]) => void): unknown;
      close(): Promise<void>;
      destroy(): void;
    }[],
  ) {}

  /** Connects (both connections) or rejects with TRANSPORT_UNAVAILABLE saying what to check. */
  static async connect(options: RedisLinkOptions): Promise<RedisLink> {
    const where = redactUrl(options.url);
    // Only what is set: an undefined password would override the one in the URL.
    const common = {
      ...(options.username !== undefined ? { username: options.username } : {}),
      ...(options.password !== undefined ? { password: options.password } : {}),
      ...(options.name !== undefined ? { name: options.name.replace(/[^\w#.:-]/g, '_') } : {}),
      disableOfflineQueue: true,
    };
    let link: RedisLink | undefined;
    const socket = {
      reconnectStrategy: reconnectStrategy(() => link !== undefined && link.#everUp),
      connectTimeout: 5000,
    };
    const cluster = clusterNodes(options.url);
    if (cluster) {
      // Nodes found through CLUSTER SLOTS get only the defaults: the credentials must be there, not just in URLs.
      const { username, password } = new URL(cluster[0]);
      const auth = {
        ...(username ? { username: decodeURIComponent(username) } : {}),
        ...(password ? { password: decodeURIComponent(password) } : {}),
      };
      const c = redisPackage()
        .createCluster({
          rootNodes: cluster.map((url) => ({ url })),
          defaults: { ...auth, ...common, socket },
        })
        .withTypeMapping(bufferTypeMapping());
      link = new RedisLink(options, c as unknown as RedisCommands, c as never, [c as never]);
      link.#watchCluster(c as never);
      await connectOrExplain(() => c.connect(), where);
    } else {
      const cmd = redisPackage()
        .createClient({ url: options.url, ...common, socket })
        .withTypeMapping(bufferTypeMapping());
      const sub = cmd.duplicate();
      link = new RedisLink(options, cmd as unknown as RedisCommands, sub as never, [cmd as never, sub as never]);
      link.#watch(cmd as never);
      link.#watch(sub as never);
      try {
        await connectOrExplain(() => cmd.connect(), where);
        await connectOrExplain(() => sub.connect(), where);
      } catch (err) {
        link.#destroy();
        throw err;
      }
    }
    link.#up = true;
    link.#everUp = true;
    return link;
  }

  get up(): boolean {
    return this.#up && !this.#closed;
  }

  /** Subscribes to `channel` (binary messages). */
  subscribe(channel: string, listener: (message: Buffer) => void): Promise<void> {
    return this.subscriber.subscribe(channel, (message) => listener(message), true);
  }

  unsubscribe(channel: string): Promise<void> {
    return this.subscriber.unsubscribe(channel).catch(() => undefined);
  }

  /** Called after the link came back from an outage: pub/sub messages of that time are lost. */
  onReconnect(fn: () => void): () => void {
    this.#onReconnect.add(fn);
    return () => this.#onReconnect.delete(fn);
  }

  /** Called when the link goes down (Redis unreachable, restarted, or refusing us). */
  onDown(fn: (err: Error) => void): () => void {
    this.#onDown.add(fn);
    return () => this.#onDown.delete(fn);
  }

  /** The error for work that cannot go on while the link is down. */
  unavailable(cause?: unknown): ChorusError {
    const why = cause instanceof Error ? `: ${cause.message}` : '';
    return new ChorusError(
      ErrorCodes.TRANSPORT_UNAVAILABLE,
      `Redis at ${redactUrl(this.options.url)} is unreachable${why}; Chorus reconnects by itself, retry the request ` +
        'when it is back (check redis-server and the network)',
      { cause },
    );
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.all(this.clients.map((c) => c.close().catch(() => destroyQuietly(c))));
  }

  #destroy(): void {
    this.#closed = true;
    for (const c of this.clients) destroyQuietly(c);
  }

  /**
   * A Cluster reports errors per node ('node-error') but no 'ready' after a node came back: once down, the link
   * probes (a GET, with backoff) until commands go through again, then resumes.
   */
  #watchCluster(cluster: { on(event: string, fn: (...args: never[]) => void): unknown }): void {
    const down = (err: Error) => {
      if (!this.#up || this.#closed || !this.#everUp) return;
      this.#up = false;
      for (const fn of this.#onDown) fn(err);
      this.#probe(0);
    };
    cluster.on('error', down);
    cluster.on('node-error', down);
  }

  #probe(attempt: number): void {
    setTimeout(() => {
      if (this.#closed) return;
      this.commands.get('chorus:probe').then(
        () => {
          this.#up = true;
          for (const fn of this.#onReconnect) fn();
        },
        () => this.#probe(attempt + 1),
      );
    }, reconnectDelayMs(attempt)).unref();
  }

  #watch(client: { on(event: string, fn: (...args: never[]) => void): unknown }): void {
    // 'error' must have a listener or node-redis throws it; an outage is reported once, on the way down.
    client.on('error', (err: Error) => {
      this.#ready.delete(client);
      if (!this.#up || this.#closed) return;
      this.#up = false;
      for (const fn of this.#onDown) fn(err);
    });
    // Up again only once EVERY connection is back ('ready' comes after node-redis resubscribed): with the command
    // connection alone, a get would be accepted while its bell still falls on a subscriber that is reconnecting.
    client.on('ready', () => {
      this.#ready.add(client);
      if (this.#up || this.#closed || !this.#everUp || this.#ready.size < this.#watched) return;
      this.#up = true;
      for (const fn of this.#onReconnect) fn();
    });
    this.#watched++;
  }

  #everUp = false;
}

/**
 * node-redis throws ClientClosedError when destroying a client that is not open (never connected, or given up on by
 * the reconnect strategy): that must not replace the error that made us give up.
 */
function destroyQuietly(client: { destroy(): void }): void {
  try {
    client.destroy();
  } catch {
    // already closed: nothing to free
  }
}

/** `redis+cluster://a:1,b:2` -> ['redis://a:1', 'redis://b:2']; null for a single-node URL. */
export function clusterNodes(url: string): string[] | null {
  const m = /^redis\+cluster(s?):\/\/(?:([^@/]*)@)?([^/?#]+)/.exec(url);
  if (!m) return null;
  const scheme = m[1] ? 'rediss' : 'redis';
  const auth = m[2] ? `${m[2]}@` : '';
  return m[3].split(',').map((hostPort) => `${scheme}://${auth}${hostPort.trim()}`);
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

async function connectOrExplain(connect: () => Promise<unknown>, where: string): Promise<void> {
  try {
    await connect();
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    const hint = /WRONGPASS|NOAUTH|invalid (username|password)|AUTH/i.test(msg)
      ? "the password (or ACL user) is wrong: set the connector's password or CHORUS_REDIS_URL to the one " +
        'redis-server was started with'
      : 'is redis-server running there and reachable (bind, port, firewall, TLS for rediss://)?';
    throw new ChorusError(ErrorCodes.TRANSPORT_UNAVAILABLE, `cannot connect to Redis at ${where} (${msg}): ${hint}`, {
      cause: err,
    });
  }
}
