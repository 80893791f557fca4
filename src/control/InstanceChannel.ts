/**
 * An instance's end of the control plane (for stage instances that are not children of main): the same messages as
 * the IPC pipe, over the engine's channels (ControlLink.ts): its own channel from main, main's channel for its
 * reports, and its heartbeats (HEARTBEAT_MS, from a thread of its own: heartbeatWorker.ts; main declares it lost
 * after HEARTBEAT_TTL_MS without one). Before it listens it checks the deployment record main keeps (a stage started
 * from another config refuses to join before it loads anything) and takes its name lease (InstanceLease.ts).
 *
 * Messages are msgpack envelopes with the protocol version (wire.ts), each under MAX_CONTROL_MESSAGE_BYTES, and
 * every one read goes through a ControlGuard: garbage, another version or a misrouted message is dropped, counted
 * and logged, and never breaks the subscription. Pub/sub is fire-and-forget: a message sent while the link is down
 * is lost, and heartbeats, which stop too, turn that into a lost instance on main's side rather than a silent hang.
 */
import { hostname } from 'node:os';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { logger } from '../common/log.ts';
import type { MainToStage, StageToMain } from '../worker/messages.ts';
import type { ControlChannel } from '../worker/ControlChannel.ts';
import { ControlGuard } from './ControlGuard.ts';
import type { ConnectorOptions, ControlChannelAt, ControlLink } from './ControlLink.ts';
import { HEARTBEAT_MS, HeartbeatThread } from './HeartbeatThread.ts';
import { acquireLease, nameTaken, newLease, releaseLease, type InstanceLease } from './InstanceLease.ts';
import { decodeControl, packControl, type DeploymentRecord, type Heartbeat, type Refusal } from './wire.ts';
/**
 * Messages kept while start() runs: what main answers to the first beats. More are dropped unread (a flood of
 * garbage must not grow memory); a boot among them is not lost for good, main repeats it until READY.
 */
const MAX_EARLY_MESSAGES = 64;

/**
 * A stage instance's end. Main's `boot` is answered with this host's own graph (`localBoot`: same config hash, but
 * model paths of this machine); a later `boot` (main restarted, or the link came back) gets the READY again.
 */
export class InstanceChannel implements ControlChannel<StageToMain, MainToStage> {
  readonly #handlers = new Set<(msg: MainToStage) => void>();
  readonly #closeHandlers: (() => void)[] = [];
  readonly #own: ControlChannelAt;
  readonly #lease: InstanceLease;
  readonly #heartbeat: Heartbeat;
  readonly #guard: ControlGuard;
  #beats: HeartbeatThread | null = null;
  /** Messages that came while start() ran (answers to the first beats), handled once it has returned. */
  #early: Buffer[] | null = [];
  #ready: StageToMain | null = null;
  #booted = false;
  /** The id of the boot this instance runs under (a boot with another one drops what it holds). */
  #bootId: string | undefined;
  #closed = false;

  /** `engine` and `options`: the plane's engine (its connector kind) and options, for the heartbeat thread. */
  constructor(
    private readonly link: ControlLink,
    private readonly engine: { readonly kind: string; readonly options: ConnectorOptions },
    readonly instance: string,
    stageId: string,
    configHash: string,
    private readonly localBoot: (msg: Extract<MainToStage, { type: 'boot' }>) => MainToStage,
    private readonly onRefused: (reason: string) => void,
  ) {
    this.#own = { kind: 'to_instance', instance };
    this.#lease = newLease(instance);
    this.#heartbeat = {
      instance,
      stageId,
      host: hostname(),
      pid: process.pid,
      configHash,
      startedAtMs: Date.now(),
      lease: this.#lease.value,
    };
    this.#guard = new ControlGuard(logger.child({ stage: instance, component: 'control' }));
  }

  /**
   * Refuses to start against a deployment of another config or protocol version, or under a name a live instance
   * holds; then listens and starts heartbeating.
   */
  async start(): Promise<void> {
    await this.#checkDeployment();
    await acquireLease(this.link, this.#lease);
    try {
      await this.link.subscribe(this.#own, (bytes) => this.#onBytes(bytes));
      // Beats from a thread of their own: a model step holds this thread for as long as it runs.
      this.#beats = await HeartbeatThread.start(
        {
          engine: this.engine.kind,
          options: this.engine.options,
          name: `chorus:${this.instance}:heartbeat`,
          message: packControl('heartbeat', this.#heartbeat),
          intervalMs: HEARTBEAT_MS,
          lease: this.#lease,
        },
        this.instance,
        (holder) => this.#fenced(holder),
      );
    } catch (err) {
      await this.link.unsubscribe(this.#own);
      await releaseLease(this.link, this.#lease).catch(() => undefined);
      throw err;
    }
    // Handled from the next turn: whoever started the channel has set up its close handlers by then.
    const early = this.#early ?? [];
    this.#early = null;
    if (early.length > 0) setImmediate(() => early.forEach((bytes) => this.#onBytes(bytes)));
  }

  send(msg: StageToMain): boolean {
    if (this.#closed || !this.link.up) return false;
    if (msg.type === 'ready') this.#ready = msg;
    const bytes = packControl('to_main', { from: this.instance, lease: this.#lease.value, msg });
    this.link.publish({ kind: 'to_main' }, bytes).catch(() => undefined);
    return true;
  }

  onMessage(handler: (msg: MainToStage) => void): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  onClose(handler: () => void): void {
    this.#closeHandlers.push(handler);
  }

  /** Where the plane is (for a log line: no credentials). */
  get where(): string {
    return this.link.where;
  }

  /** Main has booted this instance. */
  get booted(): boolean {
    return this.#booted;
  }

  get connected(): boolean {
    return !this.#closed && this.link.up;
  }

  /** Hands a message to the stage as if main had sent it (SIGTERM: a shutdown with drain). */
  inject(msg: MainToStage): void {
    for (const h of [...this.#handlers]) h(msg);
  }

  /**
   * Stops heartbeating and releases the name (main sees the instance leave once its drained message, or the TTL,
   * arrives).
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    void Promise.allSettled([this.#beats?.close(), this.link.unsubscribe(this.#own)]).finally(() => {
      for (const h of this.#closeHandlers) h();
    });
  }

  async #checkDeployment(): Promise<void> {
    const current = await this.link.readDeployment();
    if (!current) return;
    const decoded = decodeControl('deployment', current);
    if (decoded.ok) {
      if (decoded.body.configHash !== this.#heartbeat.configHash)
        throw mismatch(decoded.body, this.#heartbeat.configHash, this.link.where);
      return;
    }
    if (decoded.reason === 'version')
      throw new ChorusError(
        ErrorCodes.CONTROL_PROTOCOL,
        `the deployment on ${this.link.where} (${this.link.nameOf({ kind: 'deployment' })}) was written with ` +
          decoded.detail,
      );
    // Garbage under the key: main rewrites it within seconds, and checks this instance's config hash itself.
    this.#guard.drop('deployment', this.link.nameOf({ kind: 'deployment' }), decoded.reason, decoded.detail, current);
  }

  #onBytes(bytes: Buffer): void {
    if (this.#early) {
      if (this.#early.length < MAX_EARLY_MESSAGES) this.#early.push(bytes);
      return;
    }
    this.#guard.receive('to_instance', this.link.nameOf(this.#own), bytes, (msg) => this.#receive(msg));
  }

  /** Another process holds this instance's name now: it is that one main talks to; this one stops. */
  #fenced(holder: string): void {
    const err = nameTaken(this.instance, this.link.nameOf({ kind: 'lease', instance: this.instance }), holder);
    this.onRefused(`${err.code}: this instance lost its name to another process: ${err.message}`);
  }

  #receive(msg: MainToStage | Refusal): void {
    if (msg.type === 'refused') return this.onRefused(msg.reason);
    if (msg.type === 'boot') {
      if (this.#booted) {
        // A repeat of the boot answered (its READY may have been lost): say READY again. A boot from a main that
        // lost this instance, or from a new main: first drop every request held (main failed them, or never knew
        // them), or a rejoined stage goes on pushing frames for requests nobody reads.
        if (msg.bootId !== this.#bootId) {
          this.#bootId = msg.bootId;
          this.inject({ type: 'drop_all', reason: 'main booted this instance anew' });
        }
        if (this.#ready) this.send(this.#ready);
        return;
      }
      this.#booted = true;
      this.#bootId = msg.bootId;
      return this.inject(this.localBoot(msg));
    }
    if (this.#booted) this.inject(msg); // before boot: left over from an earlier main, nothing to act on
  }
}

export function mismatch(record: DeploymentRecord, mine: string, where: string): ChorusError {
  return new ChorusError(
    ErrorCodes.CONFIG_MISMATCH,
    `the deployment on ${where} (main on ${record.host}, pid ${record.pid}) runs config ` +
      `${record.configHash.slice(0, 12)}, this stage was started with ${mine.slice(0, 12)}: start it with the same ` +
      'config file as chorus serve',
  );
}
