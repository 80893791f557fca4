/**
 * Runs a stage graph: provisions the edges (shared-memory rings owned here), starts the stage pool (one supervised
 * process per replica, remote instances joining; pool/StagePool.ts), and admits requests in four steps: validate
 * (the request, its prompt and media), plan (routing, the EC store, then the pure planAdmission), commit (the
 * request's record, its adds, its media) and stream (the handle over its output events). A request's state lives
 * in its record (requests/RequestRecord.ts), freed at once when it ends; the pool's events reach the records
 * through requests/followPool.ts. Shutdown drains, stops and unlinks.
 */
import { cpusFor, pinThisProcess } from '../common/affinity.ts';
import { randomBytes } from 'node:crypto';
import type { StageGraph, StageSpec } from '../common/graph.ts';
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import { diagnostics } from '../common/diagnostics.ts';
import { logger, type Logger } from '../common/log.ts';
import type { AudioOutputFacts } from '../common/modelFacts.ts';
import type { Connector } from '../../transport/Connector.ts';
import {
  ChunkTransferAdapter,
  createConnector,
  provisionEdges,
  sweepStaleTransports,
  type ProvisionedEdges,
} from '../../transport/registry.ts';
import { StageWorker } from '../worker/StageWorker.ts';
import { thinkerMessage } from '../kinds/thinker/protocol.ts';
import { Router, type RouteTicket } from './routing/Router.ts';
import { sendMedia } from './MediaRoutes.ts';
import { EcStore } from './ec/EcStore.ts';
import { ecEntryOf, planEcItems } from './ec/ecPlan.ts';
import { PrefixRoutes } from './PrefixRoutes.ts';
import { LOCAL_STAGE, type StageWorkerHandle, type StartStageWorker } from './stageWorkers.ts';
import { admissiblePrompt, entryTokenizer, promptContextOf, promptPositionsOf } from './mediaPrompt.ts';
import type { PreparedPrompt, PromptContext, Tokenizer } from './mediaPrompt.ts';
import { MAIN, planEdges } from './planEdges.ts';
import type { RequestStream } from './RequestStream.ts';
import type { ChatMessage, Engine, GenerateRequest, RequestHandle, StageHealth } from '../common/engine.ts';
import { validateRequest } from './validateRequest.ts';
import { planAdmission, routedStages, type AdmissionPlan } from './admission/planAdmission.ts';
import { StagePool } from './pool/StagePool.ts';
import { deliverOutputs } from './requests/deliverOutputs.ts';
import { followPool } from './requests/followPool.ts';
import { Migrations } from './requests/Migrations.ts';
import { RequestRecord } from './requests/RequestRecord.ts';
import { RequestRegistry } from './requests/RequestRegistry.ts';
import { abortEncoders, tellStages } from './requests/tellStages.ts';
import { openStream } from './requests/openStream.ts';
import { PendingAdmission, promptTokensOf, restartWait } from './requests/PendingAdmission.ts';

export interface OrchestratorOptions {
  readonly log?: Logger;
  /** Restart a stage that dies after READY (default true). */
  readonly restartOnDeath?: boolean;
  /** How stage instances start (default: a forked process each). Tests pass in-process stand-ins. */
  readonly startWorker?: StartStageWorker;
}

export class Orchestrator implements Engine {
  private readonly requests = new RequestRegistry();
  private adapter!: ChunkTransferAdapter;
  private connector!: Connector;
  private provisioned!: ProvisionedEdges;
  private closing: Promise<void> | null = null;
  /** The encoder-output store (ec_store:), null without one. */
  private ec: EcStore | null = null;
  private readonly promptContext: PromptContext;
  private readonly pool: StagePool;
  private readonly prefixRoutes: PrefixRoutes;
  private readonly router: Router;
  /** Requests waiting for a restarting instance of a stage they need (PendingAdmission.ts). */
  private readonly pending = new Set<PendingAdmission>();

  private constructor(
    readonly graph: StageGraph,
    private readonly tokenizer: Tokenizer,
    private readonly log: Logger,
    opts: OrchestratorOptions,
  ) {
    this.promptContext = promptContextOf(graph, tokenizer);
    const startWorker = opts.startWorker ?? ((args, l) => StageWorker.start(args, l, LOCAL_STAGE));
    this.pool = new StagePool({ graph, startWorker, restartOnDeath: opts.restartOnDeath ?? true, log });
    this.prefixRoutes = new PrefixRoutes(this.pool.instances);
    this.router = new Router(graph.routing, this.pool.instances, (item) => ecEntryOf(this.ec, item));
    this.pool.on('ready', (view) => this.router.forget(view.instance));
    // After the pool has filed the instance (a remote one joins its map after this event).
    this.pool.on('ready', () => queueMicrotask(() => [...this.pending].forEach((p) => p.retry())));
  }

  static async start(graph: StageGraph, opts: OrchestratorOptions = {}): Promise<Orchestrator> {
    const log = opts.log ?? logger.child({ component: 'orchestrator' });
    const o = new Orchestrator(graph, entryTokenizer(graph), log, opts);
    for (const warning of graph.warnings ?? []) log.warn({ file: graph.file }, warning);
    // Main (and the stage processes it forks, until they place themselves) off the cores stages reserved.
    pinThisProcess(cpusFor(graph, null), log);
    // Segments left by a Chorus process that died without cleaning up (its pid is gone) are removed first.
    const swept = sweepStaleTransports();
    if (swept.length > 0) log.warn({ segments: swept }, 'removed shared memory left by dead Chorus processes');
    o.provisioned = await provisionEdges(graph, planEdges(graph));
    try {
      if (graph.ecStore) o.ec = await EcStore.open(graph.ecStore, log.child({ component: 'ec-store' }));
      o.connector = await createConnector(graph, MAIN, o.provisioned.edges);
      const deliver = () => deliverOutputs(o.adapter.processPendingChunks(), o.requests);
      o.adapter = new ChunkTransferAdapter(o.connector, MAIN, MAIN, () => queueMicrotask(deliver));
      const { pool, requests } = o;
      const audio = () => o.audioOutput;
      const admitReplay = (record: RequestRecord, runId: string) => o.admitReplay(record, runId);
      const unstoredMediaItems = (record: RequestRecord) =>
        record.prompt.items.filter((item) => ecEntryOf(o.ec, item) === null).length;
      const migrations = new Migrations({ graph, pool, requests, log, audio, admitReplay, unstoredMediaItems });
      followPool(pool, o.requests, o.ec, migrations);
      await o.pool.start(o.provisioned.edges);
    } catch (err) {
      await o.close(0);
      throw err;
    }
    log.info({ stages: [...o.pool.instances.keys()], asyncChunk: graph.asyncChunk }, 'pipeline ready');
    return o;
  }

  generate(request: GenerateRequest): RequestHandle {
    const { requestId, prompt } = this.validate(request);
    const admit = () => {
      const { plan, route } = this.plan(requestId, request, prompt);
      return this.handleOf(this.commit(request, prompt, plan, route));
    };
    try {
      return admit();
    } catch (err) {
      return this.waitForRestart(err, requestId, request, prompt, admit);
    }
  }

  /**
   * Refused OVERLOADED while a stage it needs is (re)starting: the request waits for it when it is expected back
   * within chunk_timeout_ms (PendingAdmission.ts); otherwise the refusal stands.
   */
  private waitForRestart(
    err: unknown,
    requestId: string,
    request: GenerateRequest,
    prompt: PreparedPrompt,
    admit: () => RequestHandle,
  ): RequestHandle {
    if (!(err instanceof ChorusError) || err.code !== ErrorCodes.OVERLOADED) throw err;
    const needs = routedStages(this.graph, request, prompt).map((s) => s.stageId);
    const wait = restartWait(needs, this.pool.health());
    const { chunkTimeoutMs } = this.graph.chunkPolicy;
    if (!wait || wait.waitMs > chunkTimeoutMs) throw err;
    const pending: PendingAdmission = new PendingAdmission({
      requestId,
      prompt: promptTokensOf(prompt),
      deadlineMs: Date.now() + chunkTimeoutMs,
      waitingFor: `a ready instance of ${wait.stages.join(', ')}`,
      admit,
      settled: () => this.pending.delete(pending),
    });
    this.pending.add(pending);
    this.log.info({ requestId, stages: wait.stages, expectedMs: wait.waitMs }, 'request waits for a restarting stage');
    return pending.handle;
  }

  private handleOf(record: RequestRecord): RequestHandle {
    const { requestId } = record;
    return {
      requestId,
      prompt: record.stream.promptTokenDetails(),
      events: record.stream.events.events,
      cancel: (reason?: string) => this.cancel(requestId, reason),
      pause: () => this.setPaused(requestId, true),
      resume: () => this.setPaused(requestId, false),
    };
  }

  /** Refuses what cannot run, before anything is admitted: bad fields, a taken id, text or media that cannot fit. */
  private validate(request: GenerateRequest): { requestId: string; prompt: PreparedPrompt } {
    if (this.closing) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine is shutting down');
    validateRequest(request);
    const requestId = request.requestId ?? `req-${randomBytes(8).toString('hex')}`;
    this.requests.checkFree(requestId);
    // One waiting for a restarting stage holds its id too (it has no record until admitted).
    if ([...this.pending].some((p) => p.handle.requestId === requestId))
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request id ${requestId} is already in use`);
    return { requestId, prompt: admissiblePrompt(request.messages, this.graph, this.promptContext) };
  }

  /**
   * Routing and the EC store answer (they keep what they chose), then the admission is planned from their answers.
   * `ecOwner` pins the store's entries it uses (a replay's are its request's, released with it).
   */
  private plan(
    requestId: string,
    request: GenerateRequest,
    prompt: PreparedPrompt,
    replay = false,
    ecOwner = requestId,
  ) {
    const entryStageId = this.graph.entryStageId;
    const key = (s: StageSpec) => (s.stageId === entryStageId ? request.prefix?.key : undefined);
    const stages = routedStages(this.graph, request, prompt);
    const { chosen: routed, ticket } = this.router.route(requestId, entryStageId, stages, prompt, (s, pick) =>
      this.prefixRoutes.pick(s, key(s), pick),
    );
    const thinker = routed.get(entryStageId)!.instance;
    const ec = planEcItems(this.ec, ecOwner, prompt, thinker);
    const plan = planAdmission({
      requestId,
      request,
      graph: this.graph,
      prompt,
      routed,
      ec,
      ecDrop: this.ec?.takeDrops(thinker) ?? [],
      liveRequests: this.requests.load + 1,
      audio: this.audioOutput,
      framesPerToken: this.pool.framesPerToken,
      admittedAtMs: Date.now(),
      replay,
    });
    return { plan, route: ticket };
  }

  /** Acts on the plan: the request's record, what main expects back, the hold, the adds, then the media. */
  private commit(request: GenerateRequest, prompt: PreparedPrompt, plan: AdmissionPlan, route: RouteTicket | null) {
    const { graph, tokenizer, audioOutput: audio } = this;
    const onEnd = (stream: RequestStream, reason: string) =>
      this.onRequestEnd(this.requests.get(stream.requestId)!, reason);
    const record = new RequestRecord(openStream(request, prompt, plan, { graph, tokenizer, audio, onEnd }), {
      request,
      prompt,
      route,
      media: plan.media?.routes ?? null,
      ec: this.ec,
      adapter: this.adapter,
    });
    const { requestId, stream } = record;
    this.requests.add(record);
    for (const o of plan.outputs) this.adapter.expect(requestId, o.expect);
    // Its release goes to the Talker too: one released before its first chunk is sized may size it for the load again.
    this.requests.commitHold(record, plan.hold, () => tellStages(this.pool, record, 'first_audio'));
    for (const { instance, add } of plan.adds) this.pool.admit(instance, add);
    const chunkTimeoutMs = this.graph.chunkPolicy.chunkTimeoutMs;
    if (plan.media)
      sendMedia(requestId, plan.media.sends, this.adapter, { chunkTimeoutMs, log: this.log }, (err) =>
        stream.end('error', serializeError(err)),
      );
    const { modalities } = request;
    const promptTokens = prompt.promptTokenIds.length;
    diagnostics.requestStart.publish({ requestId, modalities, promptTokens, mediaItems: prompt.items.length });
    return record;
  }

  /**
   * A migrated request's replay (requests/Migrations.ts), admitted like the request was, as run `runId`, without a
   * first-packet hold; throws (nothing sent) when routing finds no ready instance now.
   */
  private admitReplay(record: RequestRecord, runId: string): ReadonlyMap<string, string> | { refused: string } {
    const { plan, route } = this.plan(runId, record.request, record.prompt, true, record.requestId);
    const gone = plan.adds.find(({ instance }) => this.pool.instances.get(instance)?.status !== 'ready');
    const encoders = plan.stages.filter((s) => s.encoder).map((s) => s.stageId);
    if (gone || encoders.length > 0) {
      route?.release();
      if (!gone)
        return {
          refused:
            `the encoder-output store no longer holds the rows of its media items for ${encoders.join(', ')} ` +
            '(encoders are not replayed)',
        };
      throw new ChorusError(ErrorCodes.OVERLOADED, `${gone.instance} is not ready`);
    }
    record.replayed(route);
    for (const o of plan.outputs) this.adapter.expect(runId, o.expect);
    for (const { instance, add } of plan.adds) this.pool.admit(instance, add);
    return plan.instances;
  }

  promptPositions(messages: readonly ChatMessage[]): number {
    return promptPositionsOf(messages, this.graph, this.promptContext);
  }

  releasePrefix(key: string): void {
    const instance = this.prefixRoutes.release(key);
    if (instance !== undefined) this.pool.send(instance, thinkerMessage.releasePrefix(key));
  }

  /** Ends a request as cancelled; `reason` says who or what cancelled it (default: the client). */
  cancel(requestId: string, reason = 'cancelled by the client'): void {
    this.requests.get(requestId)?.stream.end('cancelled', { code: ErrorCodes.REQUEST_CANCELLED, message: reason });
  }

  private setPaused(requestId: string, paused: boolean): void {
    const record = this.requests.get(requestId);
    if (!record) return;
    record.paused = paused;
    tellStages(this.pool, record, paused ? 'pause' : 'resume');
  }

  /** Every ending goes through here once: stages drop the request's state, main releases its record. */
  private onRequestEnd(record: RequestRecord, reason: string): void {
    if (reason === 'cancelled' || reason === 'error') tellStages(this.pool, record, 'abort');
    else abortEncoders(this.pool, record);
    this.requests.release(record);
    const { requestId, startedAtMs, firstTextAtMs, firstAudioAtMs } = record.stream;
    diagnostics.requestEnd.publish({ requestId, reason, startedAtMs, firstTextAtMs, firstAudioAtMs });
  }

  health(): StageHealth[] {
    return this.pool.health();
  }

  /**
   * The audio this pipeline returns, as its vocoder reported when it came up (READY facts); null without one.
   * Replicas of one stage run one model, so the first ready instance speaks for all.
   */
  get audioOutput(): AudioOutputFacts | null {
    return this.pool.audioOutput;
  }

  /** The encoder-output store (null without `ec_store:`): routing asks it where an item's rows are. */
  get ecStore(): EcStore | null {
    return this.ec;
  }

  /** For tests and tools: the live worker of an instance. */
  workerOf(instance: string): StageWorkerHandle | null {
    return this.pool.workerOf(instance);
  }

  close(timeoutMs = 10_000): Promise<void> {
    this.closing ??= (async () => {
      const message = 'the engine shut down before the request finished';
      for (const p of [...this.pending]) p.abandon({ code: ErrorCodes.SHUTTING_DOWN, message });
      await this.pool.stop(timeoutMs);
      this.requests.endAll({ code: ErrorCodes.SHUTTING_DOWN, message });
      await this.pool.close();
      await this.ec?.close(); // after the stages: none writes to Redis any more
      await this.adapter?.close();
      await this.connector?.close();
      this.provisioned?.release();
    })();
    return this.closing;
  }
}
