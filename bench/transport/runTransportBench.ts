/**
 * Transport microbench between two processes: one-way latency of 4 KB frames and throughput of 1 MiB
 * frames for (a) the shm ring, (b) a file-per-chunk connector like vLLM-Omni's SharedMemoryConnector
 * (1 ms polling reader), (c) process.send with serialization: 'advanced', (d) the cross-host redis connector
 * (a RedisConnector in each process; its own redis-server on loopback unless given a Redis URL).
 *
 * Latency method: ping-pong. One-way = round trip / 2, measured with process.hrtime on the parent only,
 * so no cross-process clock is involved; it assumes both directions cost the same (they use the same code).
 * Throughput: the parent sends N frames back to back (with the transport's own flow control) and stops
 * the clock when the peer acknowledges the last one.
 */
import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';
import { redactUrl } from '../../src/basics.ts';
import { gitSha, nearestRank } from '../common.ts';
import { RedisServer } from '../redisServer.ts';
import { openLink, TRANSPORT_KINDS, type Link, type TransportKind } from './links.ts';
import { Tag } from './protocol.ts';

export { TRANSPORT_KINDS, type TransportKind };

export interface TransportBenchOptions {
  /** Transports to measure, in table order. Default shm, file, ipc (redis when asked for). */
  transports?: TransportKind[];
  latencyFrameBytes?: number; // default 4096
  /** Ping-pongs for shm and ipc (default 2000) and for the slow file baseline (default 300). */
  latencyIterations?: number;
  fileLatencyIterations?: number;
  warmupIterations?: number; // default 100, not measured
  throughputFrameBytes?: number; // default 1 MiB
  throughputFrames?: number; // default 256 (after a warm-up pass of 1/8 as many)
  /** Capacity of each shm ring, and max_edge_bytes of the redis link. Default 8 MiB (seven 1 MiB frames in flight). */
  ringBytes?: number;
  /** Redis for the redis transport (default CHORUS_REDIS_URL; without either, a redis-server of its own). */
  redisUrl?: string;
}

export interface LatencyStats {
  frameBytes: number;
  iterations: number;
  oneWayP50Us: number;
  oneWayP99Us: number;
  oneWayMeanUs: number;
}

export interface ThroughputStats {
  frameBytes: number;
  frames: number;
  seconds: number;
  mibPerSecond: number;
}

export interface TransportMeasurement {
  transport: TransportKind;
  label: string;
  latency: LatencyStats;
  throughput: ThroughputStats;
}

export interface TransportBenchResult {
  method: string;
  startedAt: string;
  gitSha: string;
  node: string;
  cpuModel: string;
  cpuCount: number;
  /** Which Redis the redis transport went through (password redacted), when measured. */
  redis?: string;
  transports: TransportMeasurement[];
}

export const TRANSPORT_LABELS: Record<TransportKind, string> = {
  shm: 'shm ring (doorbell)',
  file: 'file per chunk + 1 ms poll',
  ipc: "process.send 'advanced'",
  redis: 'redis connector',
};

function framed(tag: number, bytes: number): Uint8Array {
  const frame = new Uint8Array(bytes);
  for (let i = 1; i < bytes; i++) frame[i] = i & 0xff;
  frame[0] = tag;
  return frame;
}

async function measureLatency(
  link: Link,
  frameBytes: number,
  warmup: number,
  iterations: number,
): Promise<LatencyStats> {
  const ping = framed(Tag.Ping, frameBytes);
  const oneWayUs: number[] = [];
  for (let i = 0; i < warmup + iterations; i++) {
    const t0 = process.hrtime.bigint();
    await link.send(ping);
    const pong = await link.receive();
    const rttUs = Number(process.hrtime.bigint() - t0) / 1000;
    if (pong.byteLength !== frameBytes) throw new Error(`echo returned ${pong.byteLength} bytes, sent ${frameBytes}`);
    if (i >= warmup) oneWayUs.push(rttUs / 2);
  }
  const sorted = oneWayUs.sort((a, b) => a - b);
  return {
    frameBytes,
    iterations,
    oneWayP50Us: nearestRank(sorted, 50),
    oneWayP99Us: nearestRank(sorted, 99),
    oneWayMeanUs: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}

async function measureThroughput(link: Link, frameBytes: number, frames: number): Promise<ThroughputStats> {
  const bulk = framed(Tag.Bulk, frameBytes);
  const last = framed(Tag.BulkLast, frameBytes);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < frames; i++) await link.send(i === frames - 1 ? last : bulk);
  const ack = await link.receive();
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (ack[0] !== Tag.BulkLast) throw new Error('throughput run ended without the peer acknowledging the last frame');
  return { frameBytes, frames, seconds, mibPerSecond: (frames * frameBytes) / (1024 * 1024) / seconds };
}

export async function runTransportBench(options: TransportBenchOptions = {}): Promise<TransportBenchResult> {
  const transports = options.transports ?? ['shm', 'file', 'ipc'];
  const latencyFrameBytes = options.latencyFrameBytes ?? 4096;
  const throughputFrameBytes = options.throughputFrameBytes ?? 1024 * 1024;
  const ringBytes = options.ringBytes ?? 8 * 1024 * 1024;
  const result: TransportBenchResult = {
    method:
      'one-way latency = ping-pong round trip / 2 (parent hrtime); throughput = N frames until the peer acks the last',
    startedAt: new Date().toISOString(),
    gitSha: gitSha(),
    node: process.version,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    cpuCount: cpus().length,
    transports: [],
  };
  const redis = transports.includes('redis') ? await openRedis(options.redisUrl) : null;
  try {
    if (redis) result.redis = redis.description;
    for (const transport of transports) {
      const link = await openLink(transport, { ringBytes, ...(redis ? { redisUrl: redis.url } : {}) });
      try {
        const iterations =
          transport === 'file' ? (options.fileLatencyIterations ?? 300) : (options.latencyIterations ?? 2000);
        const latency = await measureLatency(link, latencyFrameBytes, options.warmupIterations ?? 100, iterations);
        const frames = options.throughputFrames ?? 256;
        // Warm-up pass: first touches of the mappings and of the allocator's large-buffer pool are not transport cost.
        await measureThroughput(link, throughputFrameBytes, Math.max(2, Math.ceil(frames / 8)));
        const throughput = await measureThroughput(link, throughputFrameBytes, frames);
        result.transports.push({ transport, label: TRANSPORT_LABELS[transport], latency, throughput });
      } finally {
        await link.close();
      }
    }
  } finally {
    await redis?.stop();
  }
  return result;
}

/** The Redis to measure through: the one given (or CHORUS_REDIS_URL), else a redis-server of our own until the end. */
async function openRedis(
  givenUrl: string | undefined,
): Promise<{ url: string; description: string; stop(): Promise<void> }> {
  const url = givenUrl ?? (process.env.CHORUS_REDIS_URL || undefined);
  if (url !== undefined) return { url, description: redactUrl(url), stop: async () => {} };
  const server = await RedisServer.start();
  return {
    url: server.url,
    description: `own ${redisServerVersion()} on 127.0.0.1:${server.port} (loopback, no persistence)`,
    stop: () => server.stop(),
  };
}

function redisServerVersion(): string {
  try {
    const out = execFileSync('redis-server', ['--version'], { encoding: 'utf8' });
    return `redis-server ${/v=(\S+)/.exec(out)?.[1] ?? '?'}`;
  } catch {
    return 'redis-server';
  }
}
