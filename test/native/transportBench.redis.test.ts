/**
 * Keeps the redis transport of the transport bench runnable: a tiny run through a RedisConnector in each of two
 * processes, with the bench's own redis-server and with one it is given; speed is not asserted here.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTransportTable } from '../../bench/transport/formatTransportTable.ts';
import { runTransportBench, type TransportBenchOptions } from '../../bench/transport/runTransportBench.ts';
import { isUsageError } from '../../src/common/cliArgs.ts';
import { run as benchCommand } from '../../src/cli/commands/bench.ts';
import { RedisServer } from '../helpers/redisServer.ts';

const TINY: TransportBenchOptions = {
  latencyIterations: 20,
  warmupIterations: 2,
  throughputFrames: 4,
  throughputFrameBytes: 64 * 1024,
};

/** Pids of the redis-server processes this process started and that still exist. */
function redisServerChildren(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces, so read after its closing parenthesis.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (comm.startsWith('redis-server') && ppid === process.pid) pids.push(Number(entry));
  }
  return pids;
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

describe('transport bench through redis', () => {
  it('starts its own redis-server when given none, measures shm and redis, and stops it', async () => {
    const envUrl = process.env.CHORUS_REDIS_URL;
    delete process.env.CHORUS_REDIS_URL; // the run must start its own, even where CI exports one
    let result;
    try {
      result = await runTransportBench({ ...TINY, transports: ['shm', 'redis'] });
    } finally {
      if (envUrl !== undefined) process.env.CHORUS_REDIS_URL = envUrl;
    }
    expect(result.transports.map((t) => t.transport)).toEqual(['shm', 'redis']);
    const redis = result.transports[1];
    expect(redis.latency.iterations).toBe(20);
    expect(redis.latency.oneWayP50Us).toBeGreaterThan(0);
    expect(redis.latency.oneWayP99Us).toBeGreaterThanOrEqual(redis.latency.oneWayP50Us);
    expect(redis.throughput.mibPerSecond).toBeGreaterThan(0);
    expect(result.redis).toMatch(/^own redis-server \S+ on 127\.0\.0\.1:\d+/);

    const table = formatTransportTable(result);
    expect(table).toMatch(/redis connector\s+\S+ (us|ms)\s+\d/);
    expect(table).toContain(`redis: ${result.redis}`);

    // Its redis-server is gone: no child of ours left, nothing listening on its port.
    expect(redisServerChildren()).toEqual([]);
    const port = Number(/127\.0\.0\.1:(\d+)/.exec(result.redis ?? '')?.[1]);
    expect(await refusesConnections(port)).toBe(true);
  });

  describe('through a Redis it is given', () => {
    let server: RedisServer;
    beforeAll(async () => {
      server = await RedisServer.start();
    });
    afterAll(() => server?.stop());

    it('leaves no key and no connection behind, and never prints the password', async () => {
      const result = await runTransportBench({ ...TINY, transports: ['redis'], redisUrl: server.url });
      expect(result.transports.map((t) => t.transport)).toEqual(['redis']);
      expect(result.transports[0].throughput.frames).toBe(4);
      expect(await server.keys()).toEqual([]);
      // Both RedisConnectors (the bench's and its peer's) closed their connections: only redis-cli's own is listed.
      await expect.poll(async () => (await server.cli('client', 'list')).trim().split('\n')).toHaveLength(1);
      expect(result.redis).toBe(`redis://:***@127.0.0.1:${server.port}`);
      expect(formatTransportTable(result)).not.toContain(server.password);
      expect(redisServerChildren()).toEqual([server.pid]);
    });
  });

  it.each([
    [['transport', '--transports', 'shm', '--redis-url', 'redis://127.0.0.1:1'], /add redis to --transports/],
    [['transport', '--transports', 'redis', '--redis-url', 'http://127.0.0.1:1'], /--redis-url must be a redis:\/\//],
  ])('chorus bench %j fails with a clear message', async (argv, message) => {
    const err = await benchCommand(argv).then(
      () => new Error('did not fail'),
      (e: unknown) => e as Error,
    );
    expect(isUsageError(err)).toBe(true);
    expect(err.message).toMatch(message);
  });
});
