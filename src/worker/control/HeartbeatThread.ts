/**
 * The step thread's handle on its heartbeat thread (heartbeatWorker.ts): starts it, resolves once its connection is
 * up and it has sent the first beat, and stops it (its connection closed, the thread exited).
 */
import { Worker } from 'node:worker_threads';
import { ChorusError, deserializeError, ErrorCodes, type SerializedError } from '../../common/errors.ts';
import type { RedisLinkOptions } from '../../../transport/redis/redisLink.ts';

/** workerData of the thread. */
export interface HeartbeatData {
  readonly link: RedisLinkOptions;
  readonly channel: string;
  /** Published as it is on every beat. */
  readonly message: Uint8Array;
  readonly intervalMs: number;
}

type FromThread = { readonly type: 'ready' } | { readonly type: 'failed'; readonly error: SerializedError };

const BOOT_URL = new URL('./heartbeatWorkerBoot.mjs', import.meta.url);

export class HeartbeatThread {
  readonly #exited: Promise<void>;
  #closing = false;

  private constructor(private readonly worker: Worker) {
    this.#exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  }

  static start(data: HeartbeatData, name: string): Promise<HeartbeatThread> {
    const worker = new Worker(BOOT_URL, { workerData: data, name: `chorus-heartbeat-${name}` });
    const thread = new HeartbeatThread(worker);
    return new Promise<HeartbeatThread>((resolve, reject) => {
      let failure: Error | null = null;
      worker.on('message', (msg: FromThread) => {
        if (msg.type === 'ready') resolve(thread);
        else failure = deserializeError(msg.error);
      });
      worker.on('error', (err) => {
        failure ??= err;
      });
      worker.once('exit', (code) =>
        reject(
          failure instanceof ChorusError
            ? failure
            : new ChorusError(ErrorCodes.TRANSPORT_UNAVAILABLE, `the heartbeat thread exited (code ${code})`, {
                cause: failure ?? undefined,
              }),
        ),
      );
    });
  }

  /** Stops the beats and waits until the thread has closed its connection and exited. */
  async close(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.worker.postMessage('close');
    }
    await this.#exited;
  }
}
