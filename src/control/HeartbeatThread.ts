/**
 * The step thread's handle on its heartbeat thread (heartbeatWorker.ts): starts it, resolves once its connection is
 * up and it has sent the first beat, tells when the instance's name was taken over (fenced), and stops it (its
 * lease released, its connection closed, the thread exited).
 */
import { Worker } from 'node:worker_threads';
import { watchHelperThread } from '../common/helperThread.ts';
import { workerEntry } from '../common/moduleFile.ts';
import type { FenceReport, HeartbeatData } from './heartbeatMessages.ts';

/** How often an instance beats. */
export const HEARTBEAT_MS = 500;
/** How long main waits for a beat before it declares the instance lost (< LEASE_TTL_MS: InstanceLease.ts). */
export const HEARTBEAT_TTL_MS = 2000;

const BOOT_URL = workerEntry('./heartbeatWorkerBoot.mjs', './heartbeatWorker', import.meta.url);

export class HeartbeatThread {
  readonly #exited: Promise<void>;
  #closing = false;

  private constructor(private readonly worker: Worker) {
    this.#exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  }

  /** `onFenced`: the instance lost its name to another process (after start, at most once). */
  static start(data: HeartbeatData, name: string, onFenced?: (holder: string) => void): Promise<HeartbeatThread> {
    const worker = new Worker(BOOT_URL, { workerData: data, name: `chorus-heartbeat-${name}` });
    const thread = new HeartbeatThread(worker);
    return new Promise<HeartbeatThread>((resolve, reject) =>
      watchHelperThread<FenceReport>(worker, 'heartbeat thread', {
        ready: () => resolve(thread),
        message: (msg) => onFenced?.(msg.holder),
        exit: reject, // a no-op once ready
      }),
    );
  }

  /** Stops the beats and waits until the thread has released the lease, closed its connection and exited. */
  async close(): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.worker.postMessage('close');
    }
    await this.#exited;
  }
}
