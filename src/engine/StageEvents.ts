/**
 * What main does with what its stage instances report or suffer: their messages (a request finished there, an
 * encoder-output entry stored, stats), a process that died (fail its requests in flight, restart it), an instance
 * silent and idle with work (hung: fail, kill, restart), a remote instance lost (fail its requests, forget it), and
 * an encoder that will not deliver a request's items (fail the request, or text_only: tell its Thinker).
 * The Orchestrator owns the state; this is the half of its stage lifecycle that reacts.
 */
import { ErrorCodes, serializeError, type SerializedError } from '../common/errors.ts';
import { diagnostics } from '../common/diagnostics.ts';
import type { Logger } from '../common/log.ts';
import type { StageToMain } from '../worker/messages.ts';
import type { EcStore } from './ec/EcStore.ts';
import type { Hang, HangWatch } from './HangWatch.ts';
import type { MediaRoutes } from './MediaRoutes.ts';
import type { RemoteStageHandle } from './RemoteStages.ts';
import type { RequestStream } from './RequestStream.ts';
import type { Router } from './routing/Router.ts';
import type { Slot } from './Slot.ts';

export interface StageEventsContext {
  readonly slots: Map<string, Slot>;
  readonly live: ReadonlyMap<string, RequestStream>;
  readonly media: MediaRoutes;
  readonly router: Router;
  readonly hangs: HangWatch;
  readonly log: Logger;
  /** The encoder-output store, null without one. */
  ec(): EcStore | null;
  /** Whether an instance that dies is started again (not while closing, not without restartOnDeath). */
  restarts(): boolean;
  /** Starts the instance's process again and wires its events. */
  boot(slot: Slot): Promise<void>;
}

export class StageEvents {
  constructor(private readonly ctx: StageEventsContext) {}

  onMessage(slot: Slot, msg: StageToMain): void {
    slot.lastHeardMs = Date.now();
    switch (msg.type) {
      case 'finished': {
        slot.inFlight.delete(msg.requestId);
        if (slot.spec.encoder) this.ctx.router.encoderFinished(slot.instance, msg.requestId, Date.now());
        const stream = this.ctx.live.get(msg.requestId);
        if (msg.warnings) stream?.addWarnings(msg.warnings);
        if (!msg.error || msg.finishReason === 'cancelled') return;
        // An encoder's failure may cost only its items (text_only); the routes decide and tell the Thinker.
        if (slot.spec.encoder) this.encoderFailed(slot, msg.requestId, msg.error);
        // A stage that failed a request before any chunk could carry the error (e.g. a rejected add) ends it here.
        else stream?.end('error', msg.error);
        return;
      }
      case 'ec_stored':
        this.ctx.ec()?.onStored(slot.instance, msg);
        return;
      case 'stats':
        slot.stats = msg.stats;
        diagnostics.stageStats.publish({ stageId: slot.spec.stageId, instance: slot.instance, ...msg.stats });
        return;
      default:
        return;
    }
  }

  onDied(slot: Slot, info: { code: number | null; signal: NodeJS.Signals | null }): void {
    const { log } = this.ctx;
    log.error({ stage: slot.instance, ...info }, 'stage died; failing its in-flight requests');
    diagnostics.stageDied.publish({ instance: slot.instance, ...info });
    slot.worker = null;
    this.ctx.ec()?.forgetHolder(slot.instance); // its in-process copies died with it
    const error = {
      code: ErrorCodes.STAGE_DIED,
      message:
        `stage ${slot.instance} died (code ${info.code}, signal ${info.signal}) while running this request; ` +
        `retry it`,
    };
    const orphans = [...slot.hungOrphans, ...this.failInFlight(slot, error)];
    slot.hungOrphans = [];
    if (!this.ctx.restarts()) {
      slot.status = 'stopped';
      return;
    }
    slot.status = 'restarting';
    slot.restarts++;
    // The rings outlive the process: chunks of the requests that died with it may still be in its input rings.
    // The new process is told to drop them, or they would sit in its connector for good.
    this.ctx.boot(slot).then(
      () => {
        for (const requestId of orphans) slot.worker?.send({ type: 'abort', requestId, reason: 'the stage restarted' });
      },
      (err: unknown) => {
        // A stage that cannot boot again stays failed: no crash loop.
        slot.status = 'failed';
        log.error({ stage: slot.instance, err: serializeError(err) }, 'stage restart failed; it stays down');
      },
    );
  }

  /** A remote instance stopped heartbeating or left: its requests fail and it leaves the routes. */
  onRemoteLost(slot: Slot, handle: RemoteStageHandle): void {
    const error = handle.lost ?? { code: ErrorCodes.STAGE_LOST, message: `stage ${slot.instance} was lost` };
    this.ctx.log.error(
      { stage: slot.instance, host: handle.host, pid: handle.pid, reason: error.message },
      'stage lost',
    );
    diagnostics.stageDied.publish({ instance: slot.instance, code: null, signal: null });
    if (this.ctx.slots.get(slot.instance) === slot) this.ctx.slots.delete(slot.instance);
    this.ctx.ec()?.forgetHolder(slot.instance);
    this.failInFlight(slot, error);
  }

  /**
   * The hang watch's tick: any ready instance with work that is silent and not computing, or computing one step past
   * the watch's CPU bound, is declared hung.
   */
  checkHangs(): void {
    for (const slot of this.ctx.slots.values()) {
      if (slot.remote) continue; // its heartbeats say whether it lives (RemoteStages)
      const hang = this.ctx.hangs.hangOf(slot, Date.now());
      if (hang) this.#declareHung(slot, hang);
    }
  }

  #declareHung(slot: Slot, hang: Hang): void {
    const { silentMs } = hang;
    slot.status = 'hung'; // not ready from this moment (/health), until its replacement is
    this.ctx.log.error({ stage: slot.instance, ...hang }, 'stage hung: failing its requests and restarting it');
    diagnostics.stageHung.publish({ instance: slot.instance, silentMs });
    const why =
      hang.kind === 'stopped'
        ? 'no report, no CPU time: stopped or stuck'
        : `no report, ${Math.round(hang.cpuMs / 1000)} s of CPU time: a step that does not end`;
    slot.hungOrphans = this.failInFlight(slot, {
      code: ErrorCodes.STAGE_HUNG,
      message:
        `stage ${slot.instance} (stage ${slot.spec.stageId}, instance ${slot.replica}) made no progress for ` +
        `${silentMs} ms while running this request (${why}); it is being restarted: retry the request`,
    });
    slot.worker?.kill('SIGKILL'); // its 'died' restarts it like a crashed one
  }

  /** Ends every request in flight on the instance with `error`; returns their ids. */
  failInFlight(slot: Slot, error: SerializedError): string[] {
    const ids = [...slot.inFlight];
    slot.inFlight.clear();
    for (const requestId of ids) {
      if (slot.spec.encoder) this.encoderFailed(slot, requestId, error);
      else this.ctx.live.get(requestId)?.end('error', error);
    }
    return ids;
  }

  /** An encoder will not deliver a request's items: fail the request, or (text_only) let the Thinker drop them. */
  encoderFailed(slot: Slot, requestId: string, error: SerializedError): void {
    const stream = this.ctx.live.get(requestId);
    if (!stream || stream.finished) return;
    const outcome = this.ctx.media.encoderFailed(requestId, slot.instance, error);
    if (!outcome) return;
    if (outcome.kind === 'fail') {
      stream.end('error', outcome.error);
      return;
    }
    this.ctx.slots
      .get(outcome.thinker)
      ?.worker?.send({ type: 'media_failed', requestId, fromInstance: slot.instance, error });
  }
}
