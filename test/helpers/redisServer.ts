/** The tests' redis-server and Cluster: the bench's own (bench/redisServer.ts), which starts one when given none. */
import { afterAll, beforeAll } from 'vitest';
import { chunkKey } from '../../transport/Connector.ts';
import type { RedisConnectorOptions } from '../../transport/redis/RedisConnector.ts';
import { RedisServer } from '../../bench/redisServer.ts';

export { freePort, RedisCluster, RedisServer, type RedisServerOptions } from '../../bench/redisServer.ts';

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
