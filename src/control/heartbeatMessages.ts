/**
 * What crosses between a stage's step thread (HeartbeatThread.ts) and its heartbeat thread (heartbeatWorker.ts): the
 * thread's workerData and what it reports, in a module of their own as the other helper threads' are (a redis
 * connector's ioMessages.ts, the VAD's vadMessages.ts), so that neither end imports the other.
 */
import type { ThreadStartReport } from '../common/helperThread.ts';
import type { ConnectorOptions } from './ControlLink.ts';
import type { InstanceLease } from './InstanceLease.ts';

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
export interface FenceReport {
  readonly type: 'fenced';
  readonly holder: string;
}

export type FromHeartbeatThread = ThreadStartReport | FenceReport;
