/**
 * The tests' redis-server (the bench's own, bench/redisServer.ts, which starts one for remote stages when given none,
 * with what only tests do to it: redis-cli, pause, restart, Cluster mode, maxmemory) and a Cluster of three of them.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { chunkKey } from '../../transport/Connector.ts';
import type { RedisConnectorOptions } from '../../transport/redis/RedisConnector.ts';
import { RedisServer as BenchRedisServer, type RedisServerOptions as BenchOptions } from '../../bench/redisServer.ts';

export { freePort } from '../../bench/redisServer.ts';

const run = promisify(execFile);

/** A Redis Cluster node's bus listens on its port + this. */
const CLUSTER_BUS_OFFSET = 10_000;

export interface RedisServerOptions extends BenchOptions {
  readonly cluster?: boolean;
  /** e.g. '2mb' with policy noeviction, to test a full Redis. */
  readonly maxmemory?: string;
}

export class RedisServer extends BenchRedisServer {
  static override async start(options: RedisServerOptions = {}): Promise<RedisServer> {
    const { cluster, maxmemory, ...rest } = options;
    const password = rest.password ?? randomBytes(12).toString('hex');
    const args = [...(rest.args ?? [])];
    if (cluster) args.push('--cluster-enabled', 'yes', '--cluster-config-file', '{dir}/nodes.conf');
    if (cluster) args.push('--masterauth', password);
    if (maxmemory) args.push('--maxmemory', maxmemory, '--maxmemory-policy', 'noeviction');
    const alsoFreeAt = cluster ? CLUSTER_BUS_OFFSET : rest.alsoFreeAt;
    // super.start constructs `this`: the server it returns is this subclass.
    return (await super.start({ ...rest, password, args, alsoFreeAt })) as RedisServer;
  }

  /** Runs redis-cli against this server; returns its output. */
  async cli(...args: string[]): Promise<string> {
    const auth = ['--no-auth-warning', '-a', this.password];
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...auth, ...args]);
    return stdout;
  }

  /** Every key on this node. */
  async keys(): Promise<string[]> {
    return (await this.cli('--scan')).split('\n').filter((k) => k.length > 0);
  }

  /** SIGSTOP: Redis stops answering, its connections stay open (a stalled server). `resume()` undoes it. */
  pause(): void {
    if (this.#alive()) this.child!.kill('SIGSTOP');
  }

  /** SIGCONT after pause(); nothing once it was killed. */
  resume(): void {
    if (this.#alive()) this.child!.kill('SIGCONT');
  }

  /** Starts again on the same port (empty: no persistence). */
  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  #alive(): boolean {
    const child = this.child;
    return child !== null && child.exitCode === null && child.signalCode === null;
  }
}

/** Connector options of the transport tests (the url aside). */
export const CONNECTOR_BASE: Omit<RedisConnectorOptions, 'url'> = {
  keyPrefix: 'chorus',
  ttlSeconds: 60,
  maxFrameBytes: 1024 * 1024,
  maxEdgeBytes: 4 * 1024 * 1024,
};

/** A deadline 10 s ahead, and the key of a request's chunk `seq` to Code2Wav. */
export const later = () => Date.now() + 10_000;
export const code2wavKey = (requestId: string, seq: number) => chunkKey(requestId, 'code2wav', seq);

/**
 * A redis-server for the describe block it is called in (started before its tests, stopped after), and the env
 * that points `chorus serve` / `chorus stage` at it.
 */
export function redisForSuite(): { readonly server: () => RedisServer; readonly env: () => Record<string, string> } {
  let redis: RedisServer | undefined;
  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await redis?.stop();
  });
  return { server: () => redis!, env: () => ({ CHORUS_REDIS_URL: redis!.url }) };
}

/** Three master nodes joined into a Cluster (all 16384 slots covered). */
export class RedisCluster {
  private constructor(readonly nodes: readonly RedisServer[]) {}

  static async start(size = 3): Promise<RedisCluster> {
    const password = randomBytes(12).toString('hex');
    const nodes: RedisServer[] = [];
    try {
      for (let i = 0; i < size; i++) nodes.push(await RedisServer.start({ password, cluster: true }));
      await nodes[0].cli('--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes');
      const cluster = new RedisCluster(nodes);
      await cluster.#waitOk();
      return cluster;
    } catch (err) {
      await Promise.all(nodes.map((n) => n.stop()));
      throw err;
    }
  }

  get password(): string {
    return this.nodes[0].password;
  }

  /** redis+cluster://:password@127.0.0.1:p1,127.0.0.1:p2,... */
  get url(): string {
    return `redis+cluster://:${this.password}@${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  async #waitOk(): Promise<void> {
    for (let attempt = 0; attempt < 400; attempt++) {
      const infos = await Promise.all(this.nodes.map((n) => n.cli('cluster', 'info')));
      if (infos.every((i) => i.includes('cluster_state:ok'))) return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the Redis Cluster did not reach cluster_state:ok');
  }
}
