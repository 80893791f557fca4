/**
 * Main's side of stage instances on other machines, whatever the control plane's engine (ControlLink.ts). An
 * instance heartbeats; main answers an unknown one of the same config with `boot`, and it joins when READY arrives.
 * Heartbeats that stop for HEARTBEAT_TTL_MS make the instance lost; a drained instance leaves; an outage of the link
 * loses every instance (their chunks and control messages may be gone) until they beat again.
 *
 * Everything read passes a ControlGuard (garbage is dropped and counted, never thrown into the subscriber), and an
 * instance is known by its name lease: a heartbeat under a lease other than the one its name holds is fenced off (a
 * stale or forged one), and one under a new lease the name does hold is a restarted instance that replaces the old
 * one.
 *
 * An instance found silent is lost only if it is still silent after the loop's next poll for I/O: after a stall (a
 * busy main) timers run before the socket reads that waited behind them, so the beats that came in time would
 * otherwise be read only after the instance was dropped for lacking them.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import type { StageGraph } from '../common/graph.ts';
import type { Logger } from '../common/log.ts';
import type { EdgeBinding, MainToStage, StageToMain } from '../worker/messages.ts';
import { ControlGuard } from './ControlGuard.ts';
import type { ConnectorOptions, ControlLink } from './ControlLink.ts';
import { HEARTBEAT_MS, HEARTBEAT_TTL_MS } from './HeartbeatThread.ts';
import { describeHolder } from './InstanceLease.ts';
import { RemoteStageHandle } from './RemoteStageHandle.ts';
import { packControl, type DeploymentRecord, type Heartbeat, type Refusal } from './wire.ts';

const DEPLOYMENT_TTL_MS = 10_000;
const DEPLOYMENT_REFRESH_MS = 2_000;
/** How often main repeats its boot to an instance that has not answered READY (models may take a while to load). */
const BOOT_RESEND_MS = 2_000;

export interface MembershipEvents {
  joined: [RemoteStageHandle];
}

export class Membership extends EventEmitter<MembershipEvents> {
  readonly #handles = new Map<string, RemoteStageHandle>();
  readonly #guard: ControlGuard;
  /** Names whose lease main is reading (one read at a time per name: the beats that come meanwhile wait for it). */
  readonly #checking = new Set<string>();
  #timer: NodeJS.Timeout | null = null;
  #confirm: NodeJS.Immediate | null = null;
  #publishedAtMs = 0;
  #closed = false;

  /**
   * `inboxesOf`: the options of the connectors of the link's engine that carry edges into an instance (where the
   * frames pushed into it wait).
   */
  constructor(
    private readonly link: ControlLink,
    private readonly graph: StageGraph,
    private readonly configHash: string,
    private readonly edgesOf: (instance: string) => EdgeBinding[],
    private readonly inboxesOf: (instance: string) => ConnectorOptions[],
    private readonly log: Logger,
  ) {
    super();
    this.#guard = new ControlGuard(log.child({ component: 'control' }));
  }

  async start(): Promise<void> {
    await this.#publishDeployment();
    const [heartbeat, toMain] = [this.#nameOf('heartbeat'), this.#nameOf('to_main')];
    await this.link.subscribe({ kind: 'heartbeat' }, (b) =>
      this.#guard.receive('heartbeat', heartbeat, b, (hb) => this.#onHeartbeat(hb)),
    );
    await this.link.subscribe({ kind: 'to_main' }, (b) =>
      this.#guard.receive('to_main', toMain, b, ({ from, lease, msg }) => this.#onMessage(from, lease, msg)),
    );
    this.link.onDown((err) => {
      for (const h of [...this.#handles.values()])
        this.#lose(
          h,
          `${this.link.where} became unreachable (${err.message}) while stage ` +
            `${h.heartbeat.instance} ran this request`,
        );
    });
    this.link.onReconnect(() => void this.#publishDeployment().catch(() => undefined));
    this.#timer = setInterval(() => this.#tick(), HEARTBEAT_MS / 2).unref();
  }

  /** Deletes the frames pushed into `instance` for these runs (best effort: they have a TTL). */
  dropInbox(instance: string, runIds: readonly string[]): void {
    this.link.dropInbox(instance, runIds, this.inboxesOf(instance));
    this.log.debug({ instance, runs: runIds.length }, 'dropped the frames pushed into a lost instance');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#confirm) clearImmediate(this.#confirm);
    await this.link.deleteDeployment().catch(() => undefined);
    await this.link.close();
  }

  #onHeartbeat(hb: Heartbeat): void {
    if (this.#closed) return;
    const known = this.#handles.get(hb.instance);
    if (known && known.heartbeat.lease === hb.lease) {
      known.lastHeartbeatMs = Date.now();
      // Pub/sub keeps nothing: a boot published before the instance (re)subscribed (its heartbeats come from a
      // connection of their own, which may be back first after an outage) is lost. Until READY, say it again; an
      // instance that got it answers with its READY (InstanceChannel.ts).
      if (!known.joined && known.boot && known.lastHeartbeatMs - known.bootSentAtMs >= BOOT_RESEND_MS) {
        known.bootSentAtMs = known.lastHeartbeatMs;
        known.send(known.boot);
      }
      return;
    }
    // Outside the guard's try (it is async): a failure here must still not become an unhandled rejection.
    this.#checkLease(hb).catch((err) => {
      this.log.error({ err, instance: hb.instance }, 'admitting a remote stage instance failed');
      this.#guard.drop('heartbeat', this.#nameOf('heartbeat'), 'handler_error', String(err));
    });
  }

  /**
   * A new name, or a known name under another lease: admitted only if the name's lease is the one it beats
   * under. Without this, two processes beating under one name made main flap between them (issue 33), and anyone
   * who can publish a heartbeat could replace a live instance.
   */
  async #checkLease(hb: Heartbeat): Promise<void> {
    if (this.#checking.has(hb.instance)) return; // its next beat asks again
    this.#checking.add(hb.instance);
    let held: string | null;
    try {
      held = await this.link.leaseHolder(hb.instance);
    } catch {
      return; // the link is down: its next beat asks again
    } finally {
      this.#checking.delete(hb.instance);
    }
    if (this.#closed) return;
    if (held !== hb.lease)
      return this.#guard.drop(
        'heartbeat',
        this.#nameOf('heartbeat'),
        'fenced',
        `a heartbeat of ${hb.instance} from host ${hb.host}, pid ${hb.pid} under a lease its name does not hold ` +
          `(held by ${held ? describeHolder(held) : 'nobody'}): a stale instance, or not one of this deployment`,
      );
    const known = this.#handles.get(hb.instance);
    if (known?.heartbeat.lease === hb.lease) return; // admitted while the lease was read
    if (known) this.#lose(known, `stage ${hb.instance} on ${known.host} restarted (a new process holds its name now)`);
    this.#admit(hb);
  }

  #admit(hb: Heartbeat): void {
    const index = this.graph.stages.findIndex((s) => s.stageId === hb.stageId);
    const refuse = (reason: string) => {
      this.log.warn({ instance: hb.instance, host: hb.host, reason }, 'refused a stage instance');
      this.#publish(hb.instance, { type: 'refused', reason });
    };
    if (hb.configHash !== this.configHash)
      return refuse(
        `this deployment runs config ${this.configHash.slice(0, 12)} (chorus serve on ${hostname()}), the instance ` +
          `was started with ${hb.configHash.slice(0, 12)}: start chorus stage with the same config file`,
      );
    if (index < 0 || !this.graph.stages[index].joinable)
      return refuse(
        index < 0
          ? `stage ${hb.stageId} is not in the graph`
          : `stage ${hb.stageId} takes no remote instances: its edges are not all on connectors that cross hosts`,
      );
    const handle = new RemoteStageHandle(hb, (msg) => this.#publish(hb.instance, msg));
    this.#handles.set(hb.instance, handle);
    handle.boot = {
      type: 'boot',
      graph: this.graph,
      stageIndex: index,
      replica: 0,
      instance: hb.instance,
      edges: this.edgesOf(hb.instance),
      bootId: randomUUID(),
    };
    handle.bootSentAtMs = Date.now();
    handle.send(handle.boot);
  }

  #onMessage(from: string, lease: string, msg: StageToMain): void {
    const handle = this.#handles.get(from);
    // Only an instance main admitted speaks here: anything else is a stale, lost or forged sender (counted).
    if (!handle || handle.lost)
      return this.#drop('unknown', `a ${msg.type} from ${from}, an instance main does not know`);
    // ...and only under the lease main admitted it by: not a stale process that lost the name, nor a second one.
    if (lease !== handle.heartbeat.lease)
      return this.#drop(
        'fenced',
        `a ${msg.type} from ${from} under a name lease other than the one main admitted it by (that of ` +
          `${describeHolder(handle.heartbeat.lease)}; this one: ${describeHolder(lease)}): a stale or second process`,
      );
    if (msg.type === 'ready' && msg.settings.stageId !== handle.heartbeat.stageId)
      return this.#drop(
        'invalid',
        `a ready of stage ${msg.settings.stageId} from ${from}, which beats as ${handle.heartbeat.stageId}`,
      );
    handle.lastHeartbeatMs = Date.now();
    if (msg.type === 'ready') {
      handle.settings = msg.settings;
      if (!handle.joined) {
        handle.joined = true;
        this.log.info({ instance: from, host: handle.host, pid: handle.pid }, 'remote stage joined');
        this.emit('joined', handle);
      }
      return;
    }
    if (msg.type === 'boot_failed') {
      this.log.error({ instance: from, host: handle.host, err: msg.error }, 'remote stage failed to boot');
      this.#handles.delete(from);
      return;
    }
    if (msg.type === 'drained') {
      this.log.info({ instance: from, host: handle.host }, 'remote stage drained and left');
      this.#lose(handle, `stage ${from} on ${handle.host} left (drained)`);
      return;
    }
    handle.emit('message', msg);
  }

  #drop(reason: 'unknown' | 'invalid' | 'fenced', detail: string): void {
    this.#guard.drop('to_main', this.#nameOf('to_main'), reason, detail);
  }

  #tick(): void {
    const now = Date.now();
    if (now - this.#publishedAtMs > DEPLOYMENT_REFRESH_MS) void this.#publishDeployment().catch(() => undefined);
    const silent = [...this.#handles.values()].filter((h) => now - h.lastHeartbeatMs > HEARTBEAT_TTL_MS);
    if (silent.length === 0 || this.#confirm) return;
    // Looked at again after the I/O poll: a beat that waited in the socket behind this timer is read first.
    this.#confirm = setImmediate(() => {
      this.#confirm = null;
      const later = Date.now();
      for (const h of silent) {
        const silentMs = later - h.lastHeartbeatMs;
        if (this.#handles.get(h.heartbeat.instance) === h && silentMs > HEARTBEAT_TTL_MS)
          this.#lose(
            h,
            `stage ${h.heartbeat.instance} (stage ${h.heartbeat.stageId}) on host ${h.host}, pid ${h.pid}, sent no ` +
              `heartbeat for ${silentMs} ms: it died, hung or lost its network; retry the request`,
          );
      }
    });
  }

  #lose(handle: RemoteStageHandle, message: string): void {
    if (this.#handles.get(handle.heartbeat.instance) === handle) this.#handles.delete(handle.heartbeat.instance);
    if (handle.joined) handle.markLost(message);
  }

  #publish(instance: string, msg: MainToStage | Refusal): void {
    if (!this.link.up) return;
    this.link.publish({ kind: 'to_instance', instance }, packControl('to_instance', msg)).catch(() => undefined);
  }

  #nameOf(kind: 'heartbeat' | 'to_main'): string {
    return this.link.nameOf({ kind });
  }

  async #publishDeployment(): Promise<void> {
    const record: DeploymentRecord = { configHash: this.configHash, host: hostname(), pid: process.pid };
    // Refreshed while main runs, deleted by close(); a main that was killed leaves it only for its TTL.
    this.#publishedAtMs = Date.now();
    await this.link.writeDeployment(packControl('deployment', record), DEPLOYMENT_TTL_MS);
  }
}
