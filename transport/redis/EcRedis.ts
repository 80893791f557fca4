/**
 * The encoder-output store's rows in Redis: one string per content key, `{namespace}:{contentKey}`, holding the
 * rows' float32 bytes, with a TTL. The namespace is `{key_prefix}:ec:{run}`: main picks a new run id each time
 * it starts and hands it out with the plans, so a pipeline that replaces another (hot reload) or a main that
 * restarts never reads, evicts or sweeps the keys of another run, even for the same content. Thinker instances
 * write what they received from an encoder and read what main says the store has; main renews TTLs on use,
 * deletes what its index evicts, and sweeps its run's keys at shutdown.
 *
 * A connection of its own (not the connector's I/O thread): a GET happens once per item at admission, off the
 * chunk path, and a stage without edges on Redis needs it too. Commands fail at once while the link is down (no
 * offline queue): a Thinker then treats the item as lost, main as a miss.
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { reconnectDelayMs, redactUrl, type RedisLinkOptions } from './redisLink.ts';
import { bufferTypeMapping, redisPackage } from './redisPackage.ts';

export type EcRedisOptions = Pick<RedisLinkOptions, 'url' | 'username' | 'password' | 'name'>;

function connect(o: EcRedisOptions) {
  return redisPackage()
    .createClient({
      url: o.url,
      ...(o.username !== undefined ? { username: o.username } : {}),
      ...(o.password !== undefined ? { password: o.password } : {}),
      ...(o.name !== undefined ? { name: o.name.replace(/[^\w#.:-]/g, '_') } : {}),
      disableOfflineQueue: true,
      socket: { reconnectStrategy: reconnectDelayMs },
    })
    .withTypeMapping(bufferTypeMapping());
}

export class EcRedis {
  private constructor(private readonly client: ReturnType<typeof connect>) {}

  /** Connects, or rejects with TRANSPORT_UNAVAILABLE naming the (redacted) URL. */
  static async open(options: EcRedisOptions, onError: (err: Error) => void): Promise<EcRedis> {
    const client = connect(options);
    client.on('error', onError); // without a listener node-redis would throw on every reconnect attempt
    try {
      await client.connect();
    } catch (cause) {
      client.destroy();
      throw new ChorusError(
        ErrorCodes.TRANSPORT_UNAVAILABLE,
        `the EC store cannot reach Redis at ${redactUrl(options.url)}: ${(cause as Error).message}; check ` +
          'ec_store.url (or the redis connector it shares) and that redis-server runs',
        { cause },
      );
    }
    return new EcRedis(client);
  }

  /** The rows under a content key, or null when Redis does not have them (expired, evicted, never stored). */
  async get(namespace: string, contentKey: string): Promise<Float32Array | null> {
    const buf = await this.client.get(`${namespace}:${contentKey}`);
    if (buf === null) return null;
    // A copy aligned for float32 (a Buffer may sit at any offset of its pool).
    const rows = new Float32Array(buf.byteLength / Float32Array.BYTES_PER_ELEMENT);
    new Uint8Array(rows.buffer).set(buf);
    return rows;
  }

  async set(namespace: string, contentKey: string, rows: Float32Array, ttlMs: number): Promise<void> {
    const bytes = Buffer.from(rows.buffer, rows.byteOffset, rows.byteLength);
    await this.client.set(`${namespace}:${contentKey}`, bytes, { PX: ttlMs });
  }

  /** Renews the TTL of an entry in use. */
  async touch(namespace: string, contentKey: string, ttlMs: number): Promise<void> {
    await this.client.pExpire(`${namespace}:${contentKey}`, ttlMs);
  }

  async delete(namespace: string, contentKeys: readonly string[]): Promise<void> {
    if (contentKeys.length > 0) await this.client.unlink(contentKeys.map((k) => `${namespace}:${k}`));
  }

  /** Deletes every key of a namespace (shutdown); returns how many. */
  async deleteAll(namespace: string): Promise<number> {
    // A plain SCAN loop: with replies mapped to Buffers, node-redis' scanIterator never sees the cursor "0" and
    // would scan forever. The cursor is read back as text here.
    let deleted = 0;
    let cursor = '0';
    do {
      const reply = await this.client.scan(cursor, { MATCH: `${namespace}:*`, COUNT: 500 });
      cursor = reply.cursor.toString();
      if (reply.keys.length > 0) deleted += await this.client.unlink(reply.keys.map((k) => k.toString()));
    } while (cursor !== '0');
    return deleted;
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => this.client.destroy());
  }
}
