/**
 * The cross-host Connector, on Redis. Same contract as shm: opaque frames, keyed; ordering, end-of-stream, deadlines
 * and duplicates stay the adapter's.
 *
 * Layout (why lists, not streams: README "Scale out"):
 *   list   `{prefix}:{requestId}:in:{to}`  one request's frames into instance `to`: [u16 key][u16 from][frame] each.
 *          The `{requestId}` hash tag keeps a request's lists on one Cluster shard and spreads requests over shards.
 *   bell   `{prefix}:bell:{to}`            pub/sub: "that list has frames". The consumer pops them (LPOP with a
 *          count: consume-once), so no connection ever blocks per request and nothing polls.
 *   ack    `{prefix}:ack:{from}`           pub/sub: "I popped N bytes of this request": the producer's credit.
 * Each list expires ttl_seconds after its last push (TTL garbage collection of what nobody consumed); cleanup()
 * deletes the request's lists into this instance at once.
 *
 * Bounded memory: a producer keeps at most max_edge_bytes of unpopped frames per edge in Redis; a put beyond that
 * waits for acks (backpressure) until its deadline. A Redis at maxmemory with noeviction refuses the push: the put
 * fails with TRANSPORT_UNAVAILABLE saying so. While the link is down, puts fail at once and pending gets fail
 * (pub/sub messages of the outage are lost, so nothing may wait on them).
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { requestIdOfKey, type Connector } from '../Connector.ts';
import { frameByteLength } from '../codec.ts';
import { KeyedMailbox, raceDeadline } from '../KeyedMailbox.ts';
import { RedisLink, clusterNodes, type RedisLinkOptions } from './redisLink.ts';

export interface RedisConnectorOptions extends RedisLinkOptions {
  readonly keyPrefix: string;
  readonly ttlSeconds: number;
  readonly maxFrameBytes: number;
  /** Unpopped bytes one edge may keep in Redis before puts wait. */
  readonly maxEdgeBytes: number;
}

const POP_BATCH = 64;

interface OutEdge {
  inflight: number;
  readonly byRequest: Map<string, number>;
  readonly waiters: Set<() => void>;
  /** The last put that had to wait for credit, and how many are waiting: later puts queue behind them. */
  tail: Promise<unknown>;
  waitingPuts: number;
}

export class RedisConnector implements Connector {
  readonly kind = 'redis' as const;
  readonly #in = new Map<string, KeyedMailbox>();
  readonly #out = new Map<string, OutEdge>();
  readonly #draining = new Map<string, Promise<void>>();
  readonly #drainAgain = new Set<string>();
  readonly #sequential: boolean;
  #closed = false;

  private constructor(
    private readonly link: RedisLink,
    private readonly self: string,
    private readonly options: RedisConnectorOptions,
  ) {
    // In a Cluster the bell may leave from another node than the list's shard: publish only once the push is done.
    this.#sequential = clusterNodes(options.url) !== null;
  }

  /** Connects, subscribes to this instance's bell and ack channels. */
  static async open(self: string, options: RedisConnectorOptions): Promise<RedisConnector> {
    const link = await RedisLink.connect({ ...options, name: `chorus:${self}` });
    const c = new RedisConnector(link, self, options);
    try {
      await link.subscribe(c.#channel('bell', self), (m) => c.#drain(m.toString()));
      await link.subscribe(c.#channel('ack', self), (m) => c.#onAck(m.toString()));
    } catch (err) {
      await link.close();
      throw link.unavailable(err);
    }
    link.onDown((err) => c.#failAll(link.unavailable(err)));
    return c;
  }

  put(from: string, to: string, key: string, frame: Uint8Array | readonly Uint8Array[], deadline: number) {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.link.up) return Promise.reject(this.link.unavailable());
    const parts = frame instanceof Uint8Array ? [frame] : frame;
    const element = encodeElement(key, from, parts);
    if (element.byteLength > this.options.maxFrameBytes)
      return Promise.reject(
        new ChorusError(
          ErrorCodes.FRAME_TOO_LARGE,
          `frame of ${element.byteLength} bytes on edge ${from}->${to} exceeds the redis connector's ` +
            `max_frame_bytes ${this.options.maxFrameBytes}: raise it (Redis takes up to 512 MB) or send less per chunk`,
        ),
      );
    const edge = this.#edge(from, to);
    const requestId = requestIdOfKey(key);
    const bytes = element.byteLength;
    const send = async () => {
      if (this.#closed) throw closedError();
      edge.inflight += bytes;
      edge.byRequest.set(requestId, (edge.byRequest.get(requestId) ?? 0) + bytes);
      try {
        await this.#push(requestId, to, element);
      } catch (err) {
        this.#credit(edge, requestId, bytes);
        throw this.#redisError(err);
      }
    };
    // Fast path: nothing waits for credit on this edge and this frame fits. The push is written now, not after the
    // previous put's reply: one connection keeps Redis's order, and a producer busy computing between its puts
    // must not pay a round trip per frame.
    if (edge.waitingPuts === 0 && this.#fits(edge, bytes)) return send();
    edge.waitingPuts++;
    const previous = edge.tail;
    const mine = (async () => {
      // Puts that wait for credit go out in call order, each waiting in turn.
      await raceDeadline(previous, deadline, () => backpressure(key, from, to));
      await this.#room(edge, bytes, deadline, () => backpressure(key, from, to));
      await send();
    })().finally(() => edge.waitingPuts--);
    edge.tail = mine.catch(() => undefined);
    return mine;
  }

  /** One connection writes the pushes in call order; puts that wait for credit queue behind each other. */
  putsInOrder(): boolean {
    return true;
  }

  get(from: string, to: string, key: string, deadline: number): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.link.up) return Promise.reject(this.link.unavailable());
    return this.#mailbox(from, to).get(key, deadline);
  }

  cleanup(requestId: string): void {
    for (const mailbox of this.#in.values()) mailbox.cleanup(requestId);
    if (!this.#closed && this.link.up) this.link.commands.del(this.#list(requestId, this.self)).catch(() => undefined);
    for (const edge of this.#out.values()) this.#credit(edge, requestId, edge.byRequest.get(requestId) ?? 0);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#failAll(closedError());
    await this.link.close();
  }

  /** Bytes this process has pushed and nobody has popped yet, per edge (tests, stats). */
  inflightBytes(from: string, to: string): number {
    return this.#out.get(`${from}->${to}`)?.inflight ?? 0;
  }

  async #push(requestId: string, to: string, element: Buffer): Promise<void> {
    const list = this.#list(requestId, to);
    const c = this.link.commands;
    const ttlMs = this.options.ttlSeconds * 1000;
    const bell = this.#channel('bell', to);
    if (this.#sequential) {
      await Promise.all([c.rPush(list, element), c.pExpire(list, ttlMs)]);
      await c.publish(bell, list);
    } else {
      // One connection, pipelined in order: the bell reaches Redis after the push.
      await Promise.all([c.rPush(list, element), c.pExpire(list, ttlMs), c.publish(bell, list)]);
    }
  }

  /** Pops every frame of `list` into its mailboxes and acks the producers. One drain per list at a time. */
  #drain(list: string): Promise<void> {
    const running = this.#draining.get(list);
    if (running) {
      // Bells that ring while a pop is out coalesce into one more pop after it, not one pop each.
      this.#drainAgain.add(list);
      return running;
    }
    const run = (async () => {
      for (;;) {
        if (this.#closed || !this.link.up) return;
        let batch: Buffer[] | null;
        try {
          batch = await this.link.commands.lPopCount(list, POP_BATCH);
        } catch {
          return; // the link went down: #failAll has told the waiters
        }
        if (!batch || batch.length === 0) return;
        const acks = new Map<string, number>();
        for (const element of batch) {
          const { key, from, frame } = decodeElement(element);
          this.#mailbox(from, this.self).deliver(key, frame);
          const ackKey = `${from}\n${requestIdOfKey(key)}`;
          acks.set(ackKey, (acks.get(ackKey) ?? 0) + element.byteLength);
        }
        for (const [ackKey, bytes] of acks) {
          const [from, requestId] = splitOnce(ackKey);
          this.link.commands
            .publish(this.#channel('ack', from), `${this.self}\n${bytes}\n${requestId}`)
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
    const edge = this.#out.get(`${this.self}->${to}`);
    if (edge) this.#credit(edge, requestId, Math.min(Number(bytes), edge.byRequest.get(requestId) ?? 0));
  }

  #credit(edge: OutEdge, requestId: string, bytes: number): void {
    if (bytes <= 0) return;
    const left = (edge.byRequest.get(requestId) ?? 0) - bytes;
    if (left > 0) edge.byRequest.set(requestId, left);
    else edge.byRequest.delete(requestId);
    edge.inflight = Math.max(0, edge.inflight - bytes);
    for (const wake of [...edge.waiters]) wake();
  }

  /** An empty edge always admits one frame. */
  #fits(edge: OutEdge, bytes: number): boolean {
    return edge.inflight === 0 || edge.inflight + bytes <= this.options.maxEdgeBytes;
  }

  /** Waits until the edge has room for `bytes`. */
  #room(edge: OutEdge, bytes: number, deadline: number, timeout: () => Error): Promise<void> {
    const fits = () => this.#fits(edge, bytes);
    if (fits()) return Promise.resolve();
    let wake!: () => void;
    const room = new Promise<void>((resolve, reject) => {
      wake = () => {
        if (this.#closed) reject(closedError());
        else if (fits()) resolve();
      };
      edge.waiters.add(wake);
    });
    return raceDeadline(room, deadline, timeout).finally(() => edge.waiters.delete(wake));
  }

  #failAll(err: ChorusError): void {
    for (const mailbox of this.#in.values()) mailbox.close(err);
    this.#in.clear(); // fresh mailboxes once the link is back
    for (const edge of this.#out.values()) {
      edge.inflight = 0; // acks of the outage are lost: start the credit over
      edge.byRequest.clear();
      for (const wake of [...edge.waiters]) wake();
    }
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

  #edge(from: string, to: string): OutEdge {
    const label = `${from}->${to}`;
    let edge = this.#out.get(label);
    if (!edge) {
      edge = { inflight: 0, byRequest: new Map(), waiters: new Set(), tail: Promise.resolve(), waitingPuts: 0 };
      this.#out.set(label, edge);
    }
    return edge;
  }

  #mailbox(from: string, to: string): KeyedMailbox {
    const label = `${from}->${to}`;
    let mailbox = this.#in.get(label);
    if (!mailbox) {
      mailbox = new KeyedMailbox(label);
      this.#in.set(label, mailbox);
    }
    return mailbox;
  }

  #list(requestId: string, to: string): string {
    return `${this.options.keyPrefix}:{${requestId}}:in:${to}`;
  }

  #channel(kind: 'bell' | 'ack', instance: string): string {
    return `${this.options.keyPrefix}:${kind}:${instance}`;
  }
}

/** [u16 keyLength][u16 fromLength][key][from][pad to 8][frame]: the frame 8-aligned within the element. */
function encodeElement(key: string, from: string, parts: readonly Uint8Array[]): Buffer {
  const k = Buffer.from(key);
  const f = Buffer.from(from);
  const headerBytes = align8(4 + k.byteLength + f.byteLength);
  const header = Buffer.alloc(headerBytes);
  header.writeUInt16LE(k.byteLength, 0);
  header.writeUInt16LE(f.byteLength, 2);
  k.copy(header, 4);
  f.copy(header, 4 + k.byteLength);
  return Buffer.concat([header, ...parts], headerBytes + frameByteLength(parts));
}

function decodeElement(element: Buffer): { key: string; from: string; frame: Uint8Array } {
  const keyLen = element.readUInt16LE(0);
  const fromLen = element.readUInt16LE(2);
  const key = element.toString('utf8', 4, 4 + keyLen);
  const from = element.toString('utf8', 4 + keyLen, 4 + keyLen + fromLen);
  const frame = element.subarray(align8(4 + keyLen + fromLen));
  // Tensors are views into the frame: it must start 8-aligned in memory. A reply Buffer may sit anywhere in the
  // client's read buffer; then copy once into a fresh (aligned) allocation.
  return { key, from, frame: frame.byteOffset % 8 === 0 ? frame : new Uint8Array(frame) };
}

const align8 = (n: number) => (n + 7) & ~7;

function splitOnce(s: string): [string, string] {
  const i = s.indexOf('\n');
  return [s.slice(0, i), s.slice(i + 1)];
}

function backpressure(key: string, from: string, to: string): ChorusError {
  return new ChorusError(
    ErrorCodes.BACKPRESSURE_TIMEOUT,
    `put of ${key} on edge ${from}->${to} waited past its deadline for the consumer to take earlier frames out of ` +
      'Redis (max_edge_bytes reached)',
  );
}

function closedError(): ChorusError {
  return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, 'redis connector is closed');
}
