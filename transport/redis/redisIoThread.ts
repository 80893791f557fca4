/**
 * The redis connector's I/O thread: owns the process's connector link (command connection + subscriber), so bells,
 * LPOPs, acks and pushes are served while the step thread runs a model step.
 *
 * Why a thread: onnxruntime-node runs a step synchronously on the step thread, and node-redis writes commands from a
 * setImmediate. On the step thread a push issued during step N left the socket only after step N+1, and a consumer
 * served its bell, then its LPOP's reply, one loop turn (one model step) each. Here the loop is always free: a push
 * leaves as soon as it is posted, and a frame is popped and posted back while the consumer computes, so it is
 * waiting in the consumer's next loop turn, as with shm.
 *
 * Consume-once and order: one drain (LPOP with a count) per list at a time; bells that ring while a pop is out
 * coalesce into one more pop. Pushes go out in the order they are posted, on one connection. A small frame also
 * rides in its bell (layout.ts): it is posted on arrival, saving the LPOP round trip on the chunk's path, and
 * CarriedFrames makes sure the pop that takes it off the list does not post it again.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { ChorusError, ErrorCodes, serializeError } from '../../src/common/errors.ts';
import { requestIdOfKey } from '../Connector.ts';
import type { FromRedisIo, PoppedFrame, RedisIoData, ToRedisIo } from './ioMessages.ts';
import { CarriedFrames } from './CarriedFrames.ts';
import { channelKey, decodeBell, decodeElement, encodeBell, listKey, ringsWithFrame } from './layout.ts';
import { RedisLink, clusterNodes } from './redisLink.ts';

const POP_BATCH = 64;

class RedisIoThread {
  readonly #draining = new Map<string, Promise<void>>();
  readonly #drainAgain = new Set<string>();
  readonly #carried = new CarriedFrames();
  // In a Cluster the bell may leave from another node than the list's shard: publish only once the push is done.
  readonly #cluster: boolean;
  #closing = false;
  #muted = false;

  constructor(
    private readonly port: MessagePort,
    private readonly link: RedisLink,
    private readonly data: RedisIoData,
  ) {
    this.#cluster = clusterNodes(data.link.url) !== null;
  }

  async subscribe(): Promise<void> {
    const { keyPrefix, self } = this.data;
    await this.link.subscribe(channelKey(keyPrefix, 'bell', self), (m) => this.#onBell(m));
    await this.link.subscribe(channelKey(keyPrefix, 'ack', self), (m) => this.#onAck(m.toString()));
    this.link.onDown((err) => this.#post({ type: 'down', error: serializeError(this.link.unavailable(err)) }));
    this.link.onReconnect(() => this.#post({ type: 'up' }));
  }

  onMessage(msg: ToRedisIo): void {
    switch (msg.type) {
      case 'push':
        if (this.#muted) return;
        this.#push(
          msg.requestId,
          msg.to,
          Buffer.from(msg.element.buffer, msg.element.byteOffset, msg.element.length),
        ).then(
          () => this.#post({ type: 'pushed', id: msg.id }),
          (err: unknown) => this.#post({ type: 'pushed', id: msg.id, error: serializeError(this.#redisError(err)) }),
        );
        return;
      case 'del': {
        if (msg.into === undefined) this.#carried.forget(msg.requestId);
        const keys = (msg.into ?? [this.data.self]).map((to) => listKey(this.data.keyPrefix, msg.requestId, to));
        if (this.link.up && keys.length > 0) this.link.commands.del(keys).catch(() => undefined);
        return;
      }
      case 'close':
        void this.#close();
        return;
      case 'crashForTest':
        throw new Error('redis I/O thread crashed (test)');
      case 'muteForTest':
        this.#muted = true;
        return;
    }
  }

  async #close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    await this.link.close();
    // Not waiting for the loop to empty: node-redis may keep a timer; process.exit in a worker ends only the thread.
    process.exit(0);
  }

  #post(msg: FromRedisIo, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(msg, transfer);
  }

  async #push(requestId: string, to: string, element: Buffer): Promise<void> {
    if (!this.link.up) throw this.link.unavailable();
    const list = listKey(this.data.keyPrefix, requestId, to);
    const c = this.link.commands;
    const ttlMs = this.data.ttlSeconds * 1000;
    const bell = channelKey(this.data.keyPrefix, 'bell', to);
    const ring = encodeBell(list, ringsWithFrame(element.byteLength, this.#cluster) ? element : null);
    if (this.#cluster) {
      await Promise.all([c.rPush(list, element), c.pExpire(list, ttlMs)]);
      await c.publish(bell, ring);
    } else {
      // One connection, pipelined in order: the bell reaches Redis after the push.
      await Promise.all([c.rPush(list, element), c.pExpire(list, ttlMs), c.publish(bell, ring)]);
    }
  }

  /** A frame that rides in its bell goes to the step thread now; the pop that follows takes it off the list. */
  #onBell(message: Buffer): void {
    const { list, element } = decodeBell(message);
    if (element) {
      const popped = decodeElement(element);
      if (this.#carried.firstSighting(requestIdOfKey(popped.key), popped.from, popped.key))
        this.#post({ type: 'frames', frames: [popped] }, [popped.frame.buffer as ArrayBuffer]);
    }
    void this.#drain(list);
  }

  /** Pops every frame of `list`, posts them to the step thread and acks the producers. One drain per list. */
  #drain(list: string): Promise<void> {
    const running = this.#draining.get(list);
    if (running) {
      // Bells that ring while a pop is out coalesce into one more pop after it, not one pop each.
      this.#drainAgain.add(list);
      return running;
    }
    const run = (async () => {
      for (;;) {
        if (this.#closing || !this.link.up) return;
        let batch: Buffer[] | null;
        try {
          batch = await this.link.commands.lPopCount(list, POP_BATCH);
        } catch {
          return; // the link went down: 'down' has told the step thread
        }
        if (!batch || batch.length === 0) return;
        const frames: PoppedFrame[] = [];
        const acks = new Map<string, { from: string; requestId: string; bytes: number }>();
        for (const element of batch) {
          const popped = decodeElement(element);
          const requestId = requestIdOfKey(popped.key);
          // A frame that rode in its bell was delivered by whichever sighting came first.
          if (
            !ringsWithFrame(element.byteLength, this.#cluster) ||
            this.#carried.firstSighting(requestId, popped.from, popped.key)
          )
            frames.push(popped);
          const ackKey = `${popped.from}\n${requestId}`;
          const ack = acks.get(ackKey) ?? { from: popped.from, requestId, bytes: 0 };
          ack.bytes += element.byteLength;
          acks.set(ackKey, ack);
        }
        if (frames.length > 0)
          this.#post(
            { type: 'frames', frames },
            frames.map((f) => f.frame.buffer as ArrayBuffer),
          );
        for (const { from, requestId, bytes } of acks.values()) {
          this.link.commands
            .publish(channelKey(this.data.keyPrefix, 'ack', from), `${this.data.self}\n${bytes}\n${requestId}`)
            .catch(() => undefined);
        }
        if (batch.length < POP_BATCH) return;
      }
    })().finally(() => {
      if (this.#draining.get(list) === run) this.#draining.delete(list);
      if (this.#drainAgain.delete(list)) void this.#drain(list);
    });
    this.#draining.set(list, run);
    return run;
  }

  #onAck(message: string): void {
    const [to, rest] = splitOnce(message);
    const [bytes, requestId] = splitOnce(rest);
    this.#post({ type: 'ack', to, bytes: Number(bytes), requestId });
  }

  #redisError(err: unknown): ChorusError {
    if (err instanceof ChorusError) return err;
    const msg = err instanceof Error ? err.message : String(err);
    if (/^OOM/.test(msg))
      return new ChorusError(
        ErrorCodes.TRANSPORT_UNAVAILABLE,
        `Redis is full (maxmemory reached, policy noeviction: ${msg}); raise maxmemory, add Cluster nodes or lower ` +
          'the load; the request was not sent',
        { cause: err },
      );
    return this.link.unavailable(err);
  }
}

function splitOnce(s: string): [string, string] {
  const i = s.indexOf('\n');
  return [s.slice(0, i), s.slice(i + 1)];
}

async function main(port: MessagePort, data: RedisIoData): Promise<void> {
  let link: RedisLink;
  try {
    link = await RedisLink.connect({ ...data.link, name: `chorus:${data.self}` });
  } catch (err) {
    port.postMessage({ type: 'failed', error: serializeError(err) } satisfies FromRedisIo);
    process.exit(1);
  }
  const io = new RedisIoThread(port, link, data);
  try {
    await io.subscribe();
  } catch (err) {
    await link.close().catch(() => undefined);
    port.postMessage({ type: 'failed', error: serializeError(link.unavailable(err)) } satisfies FromRedisIo);
    process.exit(1);
  }
  port.on('message', (msg: ToRedisIo) => io.onMessage(msg));
  port.postMessage({ type: 'ready' } satisfies FromRedisIo);
}

if (!parentPort) throw new Error('redisIoThread.ts runs as a worker thread (RedisIo starts it)');
await main(parentPort, workerData as RedisIoData);
