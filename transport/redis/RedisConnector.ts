/**
 * The cross-host Connector, on Redis. Same contract as shm: opaque frames, keyed; ordering, end-of-stream, deadlines
 * and duplicates stay the adapter's.
 *
 * Layout (transport/redis/layout.ts; why lists, not streams: README "Scale out"): each request's frames into an
 * instance are one list; the producer pushes and rings the consumer's bell channel; the consumer pops with a count
 * (LPOP, consume-once) and publishes an ack with the bytes it took, the producer's credit. On one node a small frame
 * rides in its bell as well, so the consumer has it without waiting for the LPOP. Each list expires
 * ttl_seconds after its last push (TTL garbage collection of what nobody consumed); cleanup() deletes the request's
 * lists into this instance at once.
 *
 * Two threads: this object lives on the stage's step thread (mailboxes for get(), credit for put()); every Redis
 * command runs on the connector's I/O thread (redisIoThread.ts), which pops frames while a model step runs here and
 * posts them back, so a frame costs the step thread one message, not a bell, an LPOP and a reply one loop turn each.
 *
 * Bounded memory: a producer keeps at most max_edge_bytes of unpopped frames per edge in Redis; a put beyond that
 * waits for acks (backpressure) until its deadline. A Redis at maxmemory with noeviction refuses the push: the put
 * fails with TRANSPORT_UNAVAILABLE saying so. While the link is down, puts fail at once and pending gets fail
 * (pub/sub messages of the outage are lost, so nothing may wait on them).
 */
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { requestIdOfKey, type Connector, type FrameParts } from '../Connector.ts';
import { KeyedMailbox, raceDeadline } from '../KeyedMailbox.ts';
import { encodeElement } from './layout.ts';
import { RedisIo } from './RedisIo.ts';
import { redactUrl, type RedisLinkOptions } from './redisLink.ts';

export interface RedisConnectorOptions extends RedisLinkOptions {
  readonly keyPrefix: string;
  readonly ttlSeconds: number;
  readonly maxFrameBytes: number;
  /** Unpopped bytes one edge may keep in Redis before puts wait. */
  readonly maxEdgeBytes: number;
}

interface OutEdge {
  /** The consumer instance. */
  readonly to: string;
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
  #io!: RedisIo;
  #closed = false;

  private constructor(
    private readonly self: string,
    private readonly options: RedisConnectorOptions,
  ) {}

  /** Starts the I/O thread, which connects and subscribes to this instance's bell and ack channels. */
  static async open(self: string, options: RedisConnectorOptions): Promise<RedisConnector> {
    const c = new RedisConnector(self, options);
    const { keyPrefix, ttlSeconds, url, username, password } = options;
    c.#io = await RedisIo.start(
      { self, keyPrefix, ttlSeconds, link: { url, username, password } },
      {
        onFrames: (frames) => {
          for (const { from, key, frame } of frames) c.#mailbox(from, self).deliver(key, frame);
        },
        onAck: (to, bytes, requestId) => c.#onAck(to, bytes, requestId),
        onDown: (err) => c.#failAll(err),
      },
    );
    return c;
  }

  put(from: string, to: string, key: string, frame: FrameParts, deadline: number) {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.#io.up) return Promise.reject(this.#unavailable());
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
      // The put ends at its deadline even if the I/O thread or Redis never answers (a stalled thread, a Redis that
      // stopped replying). Its bytes stay counted until the push's fate is known: a refusal gives them back, a frame
      // that did reach Redis is credited by its consumer's ack, so the edge is never credited twice.
      const pushed = this.#io.push(requestId, to, element).catch((err: unknown) => {
        this.#credit(edge, requestId, bytes);
        throw err;
      });
      await raceDeadline(pushed, deadline, () => unconfirmed(key, from, to));
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
    if (!this.#io.up) return Promise.reject(this.#unavailable());
    return this.#mailbox(from, to).get(key, deadline);
  }

  cleanup(requestId: string): void {
    for (const mailbox of this.#in.values()) mailbox.cleanup(requestId);
    if (!this.#closed && this.#io.up) this.#io.del(requestId);
    for (const edge of this.#out.values()) this.#credit(edge, requestId, edge.byRequest.get(requestId) ?? 0);
  }

  /**
   * Deletes the request's lists into every instance this one pushed to, on the I/O thread's connection after the
   * pushes already handed to it: a frame pushed into an instance that was lost would otherwise wait out its TTL, and
   * main's own deletion of that list (LostInboxes.ts) can come before a push still on its way here. A put still
   * waiting for credit goes out after it, and its list expires with the TTL.
   */
  dropSent(requestId: string): void {
    const into = [...new Set([...this.#out.values()].map((e) => e.to))];
    if (!this.#closed && this.#io.up && into.length > 0) this.#io.del(requestId, into);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#io.close();
    // After the thread is gone, so nothing is delivered past this point: what still waits is rejected now.
    this.#failAll(closedError());
  }

  /** The I/O thread's id while it runs, null once it has exited (tests, diagnostics). */
  get ioThreadId(): number | null {
    return this.#io.threadId;
  }

  /** Tests only: the I/O thread throws, as a bug in it would (the crash path). */
  crashIoThreadForTest(): void {
    this.#io.crashForTest();
  }

  /** Tests only: the I/O thread takes pushes and never answers them (a stalled thread: the put deadline path). */
  muteIoThreadForTest(): void {
    this.#io.muteForTest();
  }

  /** Bytes this process has pushed and nobody has popped yet, per edge (tests, stats). */
  inflightBytes(from: string, to: string): number {
    return this.#out.get(`${from}->${to}`)?.inflight ?? 0;
  }

  #onAck(to: string, bytes: number, requestId: string): void {
    const edge = this.#out.get(`${this.self}->${to}`);
    if (edge) this.#credit(edge, requestId, bytes);
  }

  /**
   * Gives back up to `bytes` of the request's count: never more than it still holds, since an ack, a failed push and
   * cleanup() can each speak for the same bytes (a push that fails after its request was cleaned up, an ack after
   * an outage reset the count).
   */
  #credit(edge: OutEdge, requestId: string, credited: number): void {
    const bytes = Math.min(credited, edge.byRequest.get(requestId) ?? 0);
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

  #unavailable(): ChorusError {
    return new ChorusError(
      ErrorCodes.TRANSPORT_UNAVAILABLE,
      `Redis at ${redactUrl(this.options.url)} is unreachable; Chorus reconnects by itself, retry the request when ` +
        'it is back (check redis-server and the network)',
    );
  }

  #edge(from: string, to: string): OutEdge {
    const label = `${from}->${to}`;
    let edge = this.#out.get(label);
    if (!edge) {
      edge = { to, inflight: 0, byRequest: new Map(), waiters: new Set(), tail: Promise.resolve(), waitingPuts: 0 };
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
}

function backpressure(key: string, from: string, to: string): ChorusError {
  return new ChorusError(
    ErrorCodes.BACKPRESSURE_TIMEOUT,
    `put of ${key} on edge ${from}->${to} waited past its deadline for the consumer to take earlier frames out of ` +
      'Redis (max_edge_bytes reached)',
  );
}

function unconfirmed(key: string, from: string, to: string): ChorusError {
  return new ChorusError(
    ErrorCodes.TRANSPORT_UNAVAILABLE,
    `put of ${key} on edge ${from}->${to}: Redis did not confirm the push before the put's deadline (Redis or the ` +
      "connector's I/O thread is not answering); the frame may still arrive. Check redis-server and this host's load",
  );
}

function closedError(): ChorusError {
  return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, 'redis connector is closed');
}
