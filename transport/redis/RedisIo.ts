/**
 * The step thread's end of a redis connector's I/O thread (redisIoThread.ts): starts it, waits until it is connected
 * and subscribed, posts pushes (the element transferred, not copied) and hands back what it reports. Bookkeeping
 * only; every Redis command runs on the thread.
 */
import { Worker } from 'node:worker_threads';
import { ChorusError, deserializeError, ErrorCodes } from '../../src/common/errors.ts';
import { workerEntry } from '../../src/common/moduleFile.ts';
import { watchHelperThread } from '../../src/common/helperThread.ts';
import type { IoReport, PoppedFrame, RedisIoData, ToRedisIo } from './ioMessages.ts';

export interface RedisIoEvents {
  onFrames(frames: readonly PoppedFrame[]): void;
  onAck(to: string, bytes: number, requestId: string): void;
  /** The link went down, or the thread died (then it stays down). */
  onDown(error: ChorusError): void;
}

const BOOT_URL = workerEntry('./redisIoThreadBoot.mjs', './redisIoThread', import.meta.url);

export class RedisIo {
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  readonly #pushes = new Map<number, { resolve(): void; reject(err: Error): void }>();
  #nextId = 0;
  #up = false;
  #closing = false;
  #exitedAlready = false;

  private constructor(worker: Worker) {
    this.#worker = worker;
    this.#exited = new Promise<void>((resolve) =>
      worker.once('exit', () => {
        this.#exitedAlready = true;
        resolve();
      }),
    );
  }

  /** The thread's id while it runs, null once it has exited. */
  get threadId(): number | null {
    return this.#exitedAlready ? null : this.#worker.threadId;
  }

  /** Starts the thread; resolves once it is connected and subscribed, or rejects with why it is not. */
  static start(data: RedisIoData, events: RedisIoEvents): Promise<RedisIo> {
    const worker = new Worker(BOOT_URL, { workerData: data, name: `chorus-redis-io-${data.self}` });
    const io = new RedisIo(worker);
    return new Promise<RedisIo>((resolve, reject) =>
      watchHelperThread<IoReport>(worker, 'redis I/O thread', {
        ready: () => {
          io.#up = true;
          resolve(io);
        },
        message: (msg) => io.#onMessage(msg, events),
        exit: (error) => {
          const wasUp = io.#up;
          io.#up = false;
          io.#failPushes(io.#closing ? closedError() : error);
          reject(error); // no-op once ready
          if (wasUp && !io.#closing) events.onDown(error);
        },
      }),
    );
  }

  /** False while the link is down (and for good once the thread has exited). */
  get up(): boolean {
    return this.#up && !this.#closing;
  }

  /**
   * Pushes `element` (moved to the thread: the caller must not touch it again); resolves once Redis has it, rejects
   * when Redis refused it, the link went down or the thread exited. No deadline here: the caller races its own, and
   * the outcome that comes after it still tells whether the frame reached Redis.
   */
  push(requestId: string, to: string, element: Uint8Array): Promise<void> {
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      this.#pushes.set(id, { resolve, reject });
      this.#post({ type: 'push', id, requestId, to, element }, [element.buffer as ArrayBuffer]);
    });
  }

  /** Deletes the request's list into this instance, or its lists into `into` (after the pushes posted before). */
  del(requestId: string, into?: readonly string[]): void {
    this.#post({ type: 'del', requestId, ...(into ? { into } : {}) });
  }

  /** Closes the thread's connections (after the replies of commands already sent) and waits until it has exited. */
  async close(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.#post({ type: 'close' });
    }
    await this.#exited;
  }

  /** Tests only: the thread throws, as a bug in it would. */
  crashForTest(): void {
    this.#post({ type: 'crashForTest' });
  }

  /** Tests only: the thread takes pushes and never answers them, as a stalled thread would. */
  muteForTest(): void {
    this.#post({ type: 'muteForTest' });
  }

  #failPushes(err: Error): void {
    for (const push of this.#pushes.values()) push.reject(err);
    this.#pushes.clear();
  }

  #post(msg: ToRedisIo, transfer: ArrayBuffer[] = []): void {
    this.#worker.postMessage(msg, transfer);
  }

  #onMessage(msg: IoReport, events: RedisIoEvents): void {
    switch (msg.type) {
      case 'pushed': {
        const push = this.#pushes.get(msg.id);
        this.#pushes.delete(msg.id);
        if (msg.error) push?.reject(deserializeError(msg.error));
        else push?.resolve();
        return;
      }
      case 'frames':
        events.onFrames(msg.frames);
        return;
      case 'ack':
        events.onAck(msg.to, msg.bytes, msg.requestId);
        return;
      case 'down': {
        this.#up = false;
        const error = deserializeError(msg.error);
        // A push out when the link broke may never be answered (node-redis fails what it still holds, but nothing
        // obliges a reply): its put fails now, as a put made while down does. It may have reached Redis; the
        // connector starts its credit over on this same report.
        this.#failPushes(error);
        events.onDown(error);
        return;
      }
      case 'up':
        this.#up = true;
        return;
    }
  }
}

function closedError(): ChorusError {
  return new ChorusError(ErrorCodes.CONNECTOR_CLOSED, 'redis connector is closed');
}
