/**
 * Requests lost with a stage instance (it died, the hang watch replaced it, a remote one was lost) replayed on live
 * instances instead of failed, where the stage's `engine.migration` allows (the bookkeeping: migration.ts). A lost
 * request's other stages drop its lost run at once; the request then waits, up to the lost stage's
 * `engine.migration.max_wait_ms` (chunk_timeout_ms unless set), until every stage it runs on has a ready instance (a
 * restarted replica, a replacement that joins over Redis under a new name or the old one, another replica already
 * there) and is admitted again under its next run id; its stream skips what the client already has. The client sees a
 * pause. The wait is woken by the pool's events (an instance READY, a request finished somewhere: room for the
 * replay), never polled, and its deadline ends it, saying which stage had no instance and how to give it one.
 */
import { onDeadline } from '../../common/deadline.ts';
import { diagnostics } from '../../common/diagnostics.ts';
import { serializeError, type SerializedError } from '../../common/errors.ts';
import type { StageGraph } from '../../common/graph.ts';
import type { Logger } from '../../common/log.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import type { StagePool } from '../pool/StagePool.ts';
import type { InstanceView } from '../pool/StageInstance.ts';
import {
  answerTokensOf,
  migrationVerdict,
  ReplayCursor,
  runIdOf,
  stagesWithoutReady,
  waitedOutWhy,
  type MigrationReason,
} from './migration.ts';
import type { RequestRecord } from './RequestRecord.ts';
import type { RequestRegistry } from './RequestRegistry.ts';
import { tellStages } from './tellStages.ts';

export interface MigrationsContext {
  readonly graph: StageGraph;
  readonly pool: StagePool;
  readonly requests: RequestRegistry;
  readonly log: Logger;
  readonly audio: () => AudioOutputFacts | null;
  /**
   * Plans and admits the record's replay as `runId` on ready instances (its adds sent, main expecting its outputs,
   * the media the store does not hold sent to encoders); returns the instance of each stage. Throws when it cannot be
   * admitted now (the request waits on).
   */
  readonly admitReplay: (record: RequestRecord, runId: string) => ReadonlyMap<string, string>;
}

export class Migrations {
  /**
   * Requests waiting for their replay's admission (a record leaves once replayed or ended), with why their replay was
   * last not admitted though every stage had a ready instance (null: it never got that far).
   */
  readonly #waiting = new Map<RequestRecord, string | null>();

  constructor(private readonly ctx: MigrationsContext) {
    // What may let a waiting replay in: an instance READY (a restart, a remote join, whatever its name), or a
    // request finished on an instance (room on one that was ready but full).
    ctx.pool.on('ready', () => this.#wake());
    ctx.pool.on('finished', () => this.#wake());
  }

  /**
   * The request's run `runId` was lost with `view`'s instance. Returns false when the stage does not migrate (the
   * caller fails the request as before); true when this took the request over (migrating, or ended saying why not).
   */
  take(view: InstanceView, runId: string, error: SerializedError, reason: MigrationReason): boolean {
    const settings = view.spec.engine.migration;
    if (!settings) return false;
    const record = this.ctx.requests.ofRun(runId);
    if (!record || record.stream.finished) return true; // nothing left to save
    if (record.migrating) return true; // another of its stages was lost with the same run: one replay covers both
    const stageId = view.spec.stageId;
    const verdict = migrationVerdict({
      settings,
      attempts: record.attempts - record.reencodes, // its replays, not its re-encodes
      answerTokens: answerTokensOf(record.stream.delivered, this.ctx.audio()),
    });
    const facts = { requestId: record.requestId, stageId, reason, lostInstance: view.instance };
    if (!verdict.migrate) {
      this.ctx.log.warn({ ...facts, why: verdict.why }, 'request not migrated');
      diagnostics.requestMigrated.publish({ ...facts, outcome: 'refused' });
      record.stream.end('error', { ...error, message: `${error.message} (not migrated: ${verdict.why})` });
      return true;
    }
    // Its other stages let the lost run go (the lost instance reads nothing).
    tellStages(this.ctx.pool, record, 'abort');
    const setting =
      settings.maxWaitMs === null ? 'chunk_policy.chunk_timeout_ms' : `stages.${stageId}.engine.migration.max_wait_ms`;
    const waitMs = settings.maxWaitMs ?? this.ctx.graph.chunkPolicy.chunkTimeoutMs;
    // After the poll: a READY that reached main's pipe in time, behind a stall of main's, lets the replay in first.
    // unref: a request that waits keeps no process alive; its stream (and the server's close) still ends it.
    const lostAtMs = Date.now();
    const cancelDeadline = onDeadline(lostAtMs + waitMs, () => this.#giveUp(record, waitMs, setting), { unref: true });
    record.startMigration({ stageId, lostInstance: view.instance, reason, error, lostAtMs }, cancelDeadline);
    this.ctx.log.warn(
      { ...facts, run: runId, attempt: record.attempts + 1, maxWaitMs: waitMs },
      'request migrating: waiting for a live instance',
    );
    this.#waiting.set(record, null);
    this.#tryReplay(record);
    return true;
  }

  #wake(): void {
    for (const record of this.#waiting.keys()) {
      if (record.migrating && !record.stream.finished) this.#tryReplay(record);
      if (!record.migrating || record.stream.finished) this.#waiting.delete(record);
    }
  }

  /** Admits the replay if every stage of the request has a ready instance; else it waits for the pool's next event. */
  #tryReplay(record: RequestRecord): void {
    const pending = record.migrating!;
    if (stagesWithoutReady(record.instances.keys(), this.ctx.pool.instances.values()).length > 0) return;
    const { stream } = record;
    const delivered = stream.delivered;
    const runId = runIdOf(record.requestId, record.attempts + 1);
    let admitted: ReturnType<MigrationsContext['admitReplay']>;
    try {
      admitted = this.ctx.admitReplay(record, runId);
    } catch (err) {
      // Ready a moment ago, overloaded or gone now: the pool's next event (or the deadline) decides.
      const notAdmitted = serializeError(err);
      this.ctx.log.debug({ requestId: record.requestId, err: notAdmitted }, 'replay not admitted yet');
      this.#waiting.set(record, notAdmitted.message);
      return;
    }
    const instances = admitted;
    const { lostInstance } = pending;
    const newInstance = instances.get(pending.stageId) ?? null;
    const waitMs = Date.now() - pending.lostAtMs; // the restart, or the wait for another instance
    const facts = { requestId: record.requestId, stageId: pending.stageId, reason: pending.reason };
    this.ctx.log.info(
      { ...facts, run: runId, lostInstance, newInstance, waitMs, skipped: delivered },
      'request migrated: replaying it',
    );
    stream.replay(instances, new ReplayCursor(delivered.tokens, delivered.samples), () => {
      const pauseMs = Date.now() - pending.lostAtMs;
      this.ctx.log.info({ ...facts, run: runId, waitMs, pauseMs }, 'migrated request caught up');
      const outcome = 'migrated';
      diagnostics.requestMigrated.publish({ ...facts, lostInstance, newInstance, outcome, waitMs, pauseMs });
    });
    if (record.paused) tellStages(this.ctx.pool, record, 'pause');
  }

  #giveUp(record: RequestRecord, waitMs: number, setting: string): void {
    const notAdmitted = this.#waiting.get(record) ?? null;
    this.#waiting.delete(record);
    const pending = record.migrating;
    if (!pending || record.stream.finished) return;
    const { stages } = this.ctx.graph;
    const missing = stagesWithoutReady(record.instances.keys(), this.ctx.pool.instances.values()).map((id) =>
      stages.find((s) => s.stageId === id)!,
    );
    const why = waitedOutWhy(waitMs, setting, missing, notAdmitted);
    const facts = { requestId: record.requestId, stageId: pending.stageId, reason: pending.reason };
    this.ctx.log.error(
      { ...facts, lostInstance: pending.lostInstance, waitMs, why },
      'migration failed: no live instance',
    );
    diagnostics.requestMigrated.publish({ ...facts, lostInstance: pending.lostInstance, outcome: 'failed' });
    record.stream.end('error', {
      code: pending.error.code,
      message: `${pending.error.message} (not migrated: ${why})`,
    });
  }
}
