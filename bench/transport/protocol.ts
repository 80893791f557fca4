/** What bench/transport/runTransportBench.ts and its peer process (benchPeer.ts) say to each other. */
import type { RedisConnectorOptions } from '../../src/index.ts';

export type PeerSetup =
  | { transport: 'shm'; toPeer: string; fromPeer: string }
  | { transport: 'file'; namespace: string }
  | { transport: 'ipc' }
  | { transport: 'redis'; url: string; keyPrefix: string; maxEdgeBytes: number };

/**
 * The redis link is two RedisConnector instances, one per process, exchanging the frames of one request: "main" sends
 * to "peer#0" under keys `bench_peer_{seq}` and the peer answers under `bench_main_{seq}` (transport/Connector.ts).
 */
export const REDIS_BENCH = { main: 'main', peer: 'peer#0', requestId: 'bench' } as const;

/** The options both ends open their RedisConnector with (the rest are the connector's defaults). */
export function redisBenchOptions(setup: Extract<PeerSetup, { transport: 'redis' }>): RedisConnectorOptions {
  return {
    url: setup.url,
    keyPrefix: setup.keyPrefix,
    ttlSeconds: 60,
    maxFrameBytes: 64 * 1024 * 1024,
    maxEdgeBytes: setup.maxEdgeBytes,
  };
}

/** First byte of every bench frame. */
export const Tag = {
  Stop: 0,
  Ping: 1, // echo it back unchanged
  Bulk: 2, // consume it
  BulkLast: 3, // consume it, then answer with a 1-byte ack
} as const;

export const READY = 'ready';
/** Deadline for any single wait in the bench: generous, only there so nothing hangs forever. */
export const WAIT_MS = 30_000;
