/**
 * The step thread's handle on its heartbeat thread (heartbeatWorker.ts): starts it, resolves once its connection is
 * up and it has sent the first beat, tells when the instance's name was taken over (fenced), and stops it (its
 * lease released, its connection closed, the thread exited).
 */
import { Worker } from 'node:worker_threads';
import { watchHelperThread, type ThreadStartReport } from '../common/helperThread.ts';
import { workerEntry } from '../common/moduleFile.ts';
import type { ConnectorOptions } from './ControlLink.ts';
import type { InstanceLease } from './InstanceLease.ts';

/** How often an instance beats. */
export const HEARTBEAT_MS = 500;
/** How long main waits for a beat before it declares the instance lost (< LEASE_TTL_MS: InstanceLease.ts). */
export const HEARTBEAT_TTL_MS = 2000;

/** workerData of the thread. */
export interface HeartbeatData {
  /** The plane's engine (engines.ts) and its connector's options: the thread connects on its own. */
  readonly engine: string;
  readonly options: ConnectorOptions;
  /** Its connection's name on the server. */
  readonly name: string;
  /** Published as it is on every beat. */
  readonly message: Uint8Array;
  readonly intervalMs: number;
  /** The instance's name lease (taken before the thread starts): renewed by each beat, released on close. */
  readonly lease?: InstanceLease;
}

/** The lease is held by another process now (`holder`, its value): the thread stopped beating. */
interface FenceReport {
  readonly type: 'fenced';
  readonly holder: string;
}

export type FromHeartbeatThread = ThreadStartReport | FenceReport;

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
