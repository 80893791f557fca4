/**
 * What the pool does with what its instances report or suffer: their messages (a request finished there, an
 * encoder-output entry stored, stats), a process that died (its requests fail, it restarts), an instance silent
 * and idle with work (hung: its requests fail, it is killed and restarts), a remote instance lost (its requests
 * fail, it leaves). It changes the instance records and tells the request side through the pool's events: it
 * never reaches a request itself.
 */
import type { EventEmitter } from 'node:events';
import { ErrorCodes, serializeError, type SerializedError } from '../../common/errors.ts';
import { diagnostics } from '../../common/diagnostics.ts';
import type { Logger } from '../../common/log.ts';
import type { StageToMain } from '../../worker/messages.ts';
import type { Hang, HangWatch } from './HangWatch.ts';
import type { LostInboxes } from './LostInboxes.ts';
import type { RemoteStageHandle } from '../../control/ControlPlane.ts';
import type { StagePoolEvents } from './StagePoolEvents.ts';
import type { StageInstance } from './StageInstance.ts';

export interface InstanceEventsContext {
  readonly instances: Map<string, StageInstance>;
  readonly hangs: HangWatch;
  readonly log: Logger;
  /** The engine's id, tagged on the diagnostics reports (Engine.id); absent: untagged. */
  readonly engine?: string;
  /** Whether an instance that dies is started again (not while closing, not without restartOnDeath). */
  restarts(): boolean;
  /** Starts the instance's process again and wires its events. */
  boot(instance: StageInstance): Promise<void>;
  /** The pool itself: what happens to its instances goes out as its events. */
  readonly events: EventEmitter<StagePoolEvents>;
  /** The Redis lists of frames into lost remote instances, dropped once nobody pushes into them. */
  readonly inboxes: LostInboxes;
}

export class InstanceEvents {
  #hangConfirm: NodeJS.Immediate | null = null;

  constructor(private readonly ctx: InstanceEventsContext) {}

  onMessage(inst: StageInstance, msg: StageToMain): void {
    inst.lastHeardMs = Date.now();
    switch (msg.type) {
      case 'finished':
        inst.inFlight.delete(msg.requestId);
        this.ctx.events.emit('finished', inst, msg);
        this.ctx.inboxes.released(msg.requestId);
        return;
      case 'ec_stored':
        this.ctx.events.emit('ecStored', inst.instance, msg);
        return;
      case 'media_released':
        this.ctx.events.emit('mediaReleased', inst.instance, msg);
        return;
      case 'media_retry':
        this.ctx.events.emit('mediaRetry', inst.instance, msg);
        return;
      case 'stats':
        inst.stats = msg.stats;
        diagnostics.stageStats.publish({
          stageId: inst.spec.stageId,
          instance: inst.instance,
          ...msg.stats,
          engine: this.ctx.engine, // last: a report cannot name another engine
        });
        this.ctx.events.emit('stats', inst);
        return;
      default:
        return;
    }
  }

  onDied(inst: StageInstance, info: { code: number | null; signal: NodeJS.Signals | null }): void {
    this.ctx.log.error(
      { stage: inst.instance, ...info },
      'stage died; its in-flight requests migrate where engine.migration allows, else fail',
    );
    diagnostics.stageDied.publish({ instance: inst.instance, ...info, engine: this.ctx.engine });
    inst.worker = null;
    inst.stats = null; // what it reported (its queue, its prefix cache's blocks) died with it
    const error = {
      code: ErrorCodes.STAGE_DIED,
      message:
        `stage ${inst.instance} died (code ${info.code}, signal ${info.signal}) while running this request; ` +
        `retry it`,
    };
    // Not ready from here on, before its requests hear of it: one migrating (requests/Migrations.ts) must not be
    // admitted again to the process that just died.
    const restarts = this.ctx.restarts();
    inst.status = restarts ? 'restarting' : 'stopped';
    const orphans = [...inst.hungOrphans, ...this.failInFlight(inst, 'lost', error)];
    inst.hungOrphans = [];
    if (!restarts) return;
    inst.restarts++;
    this.restart(inst, orphans);
  }

  /**
   * The rings outlive the process: chunks of the requests that died with it may still be in its input rings. The
   * new process is told to drop them, or they would sit in its connector for good.
   */
  private restart(inst: StageInstance, orphans: readonly string[]): void {
    this.ctx.boot(inst).then(
      () => {
        for (const requestId of orphans) inst.worker?.send({ type: 'abort', requestId, reason: 'the stage restarted' });
      },
      (err: unknown) => {
        // A stage that cannot boot again stays failed: no crash loop.
        inst.status = 'failed';
        this.ctx.log.error({ stage: inst.instance, err: serializeError(err) }, 'stage restart failed; it stays down');
      },
    );
  }

  /** A remote instance stopped heartbeating or left: its requests fail and it leaves the pool. */
  onRemoteLost(inst: StageInstance, handle: RemoteStageHandle): void {
    const error = handle.lost ?? { code: ErrorCodes.STAGE_LOST, message: `stage ${inst.instance} was lost` };
    this.ctx.log.error(
      { stage: inst.instance, host: handle.host, pid: handle.pid, reason: error.message },
      'stage lost',
    );
    diagnostics.stageDied.publish({ instance: inst.instance, code: null, signal: null, engine: this.ctx.engine });
    if (this.ctx.instances.get(inst.instance) === inst) this.ctx.instances.delete(inst.instance);
    // After failInFlight: the request side has told the lost runs' other instances to drop them, and they hold
    // them until they say `finished` (pushing into the lost instance's lists until then, maybe).
    this.ctx.inboxes.lost(inst.instance, this.failInFlight(inst, 'lost', error));
  }

  /**
   * The hang watch's tick: any ready instance with work that is silent and not computing, or computing one step past
   * the watch's CPU bound, is declared hung, if it is still silent after the loop's next poll for I/O: after a stall
   * of main's, this timer runs before the reports that waited in the stage's pipe are read, and would kill a live
   * stage for lacking them.
   */
  checkHangs(): void {
    const found: { inst: StageInstance; hang: Hang; heardMs: number; worker: StageInstance['worker'] }[] = [];
    for (const inst of this.ctx.instances.values()) {
      if (inst.remote) continue; // its heartbeats say whether it lives (src/control/Membership.ts)
      const hang = this.ctx.hangs.hangOf(inst, Date.now());
      if (hang) found.push({ inst, hang, heardMs: inst.lastHeardMs, worker: inst.worker });
    }
    if (found.length === 0 || this.#hangConfirm) return;
    this.#hangConfirm = setImmediate(() => {
      this.#hangConfirm = null;
      for (const { inst, hang, heardMs, worker } of found)
        if (inst.lastHeardMs === heardMs && inst.worker === worker && inst.status === 'ready')
          this.declareHung(inst, hang);
    });
  }

  /** No hang is declared from here on (the pool stops). */
  stopHangChecks(): void {
    if (this.#hangConfirm) clearImmediate(this.#hangConfirm);
    this.#hangConfirm = null;
  }

  private declareHung(inst: StageInstance, hang: Hang): void {
    const { silentMs } = hang;
    inst.status = 'hung'; // not ready from this moment (/health), until its replacement is
    this.ctx.log.error(
      { stage: inst.instance, ...hang },
      'stage hung: restarting it; its requests migrate where engine.migration allows, else fail',
    );
    diagnostics.stageHung.publish({ instance: inst.instance, silentMs, engine: this.ctx.engine });
    const why =
      hang.kind === 'stopped'
        ? 'no report, no CPU time: stopped or stuck'
        : `no report, ${Math.round(hang.cpuMs / 1000)} s of CPU time: a step that does not end`;
    inst.hungOrphans = this.failInFlight(inst, 'hung', {
      code: ErrorCodes.STAGE_HUNG,
      message:
        `stage ${inst.instance} (stage ${inst.spec.stageId}, instance ${inst.replica}) made no progress for ` +
        `${silentMs} ms while running this request (${why}); it is being restarted: retry the request`,
    });
    inst.worker?.kill('SIGKILL'); // its 'died' restarts it like a crashed one
  }

  /** Empties the instance's in-flight set and tells the request side those requests failed; returns their ids. */
  private failInFlight(inst: StageInstance, event: 'lost' | 'hung', error: SerializedError): string[] {
    const ids = [...inst.inFlight];
    inst.inFlight.clear();
    this.ctx.events.emit(event, inst, ids, error);
    for (const id of ids) this.ctx.inboxes.released(id);
    return ids;
  }
}
