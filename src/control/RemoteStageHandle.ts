/**
 * A remote stage instance as main drives it: like a local StageWorker (send, died, message: the engine holds both as
 * a StageWorkerHandle), but its life is its heartbeats (Membership.ts) and main can neither stop nor signal it.
 */
import { EventEmitter } from 'node:events';
import { ErrorCodes, type SerializedError } from '../common/errors.ts';
import type { MainToStage, StageReadySettings } from '../worker/messages.ts';
import type { StageWorkerEvents } from '../worker/StageWorker.ts';
import type { Heartbeat } from './wire.ts';

export class RemoteStageHandle extends EventEmitter<StageWorkerEvents> {
  settings: StageReadySettings | null = null;
  lastHeartbeatMs: number;
  /** Why it is gone (set when it is lost). */
  lost: SerializedError | null = null;
  joined = false;
  /** Main's boot to it, and when it was last sent (sent again while the instance has not answered READY). */
  boot: Extract<MainToStage, { type: 'boot' }> | null = null;
  bootSentAtMs = 0;

  constructor(
    readonly heartbeat: Heartbeat,
    private readonly publish: (msg: MainToStage) => void,
  ) {
    super();
    this.lastHeartbeatMs = Date.now();
  }

  get pid(): number {
    return this.heartbeat.pid;
  }

  get host(): string {
    return this.heartbeat.host;
  }

  /** Over the control plane: where another machine's process wakes is that machine's (StageSendOptions ignored). */
  send(msg: MainToStage): void {
    this.publish(msg);
  }

  /** Remote instances are not main's to stop: they drain on their own SIGTERM. */
  async shutdown(): Promise<void> {}

  /** Cannot signal another machine: main stops using it (lost), and it is fenced off by its heartbeat TTL. */
  kill(): void {
    this.markLost(`stage ${this.heartbeat.instance} on ${this.host} stopped making progress (main gave up on it)`);
  }

  markLost(message: string): void {
    if (this.lost) return;
    this.lost = { code: ErrorCodes.STAGE_LOST, message };
    this.emit('died', { code: null, signal: null });
  }
}
