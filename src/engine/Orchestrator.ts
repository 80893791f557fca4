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
import { MAIN, type StageGraph } from '../common/graph.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { diagnostics, newEngineId } from '../common/diagnostics.ts';
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
import { releasePrefixMessage } from '../../stages/requestEvents.ts';
import { Router, type RouteBooking } from './routing/Router.ts';
import { EcStore } from './ec/EcStore.ts';
import { setMainV8Flags } from './mainHeap.ts';
import { ecEntryOf, forgetLostItem } from './ec/ecPlan.ts';
import { inPartition } from './promptPartition.ts';
import { PrefixRoutes } from './PrefixRoutes.ts';
import { LOCAL_STAGE, type StageWorkerHandle, type StartStageWorker } from './stageWorkers.ts';
import { admissiblePrompt, entryTokenizer, promptContextOf, promptPositionsOf } from './mediaPrompt.ts';
import { fitPrompt, videoFitPolicy } from './fitPrompt.ts';
import type { MediaItem, PreparedPrompt, PromptContext, Tokenizer } from './mediaPrompt.ts';
import { planEdges } from './planEdges.ts';
import type { RequestStream } from './RequestStream.ts';
import type {
  ChatMessage,
  Engine,
  FirstOutputEstimate,
  GenerateRequest,
  RequestHandle,
  StageHealth,
} from '../common/engine.ts';
import { validateRequest } from './validateRequest.ts';
import type { AdmissionPlan } from './admission/planAdmission.ts';
import { planRequest, type RequestToPlan } from './admission/planRequest.ts';
import { StagePool } from './pool/StagePool.ts';
import { deliverOutputs } from './requests/deliverOutputs.ts';
import { followPool } from './requests/followPool.ts';
import { Migrations } from './requests/Migrations.ts';
import { RequestRecord } from './requests/RequestRecord.ts';
import { RequestRegistry } from './requests/RequestRegistry.ts';
import { abortEncoders, tellStages } from './requests/tellStages.ts';
import { commitReplay, commitRequest, commitRerun, handleOf } from './requests/commitRequest.ts';
import { Reencodes } from './requests/Reencodes.ts';
import { runIdOf } from './requests/migration.ts';
import { PendingAdmissions } from './requests/PendingAdmission.ts';
import { MediaRowsBudget, mediaRowsBudgetOf } from './MediaRowsBudget.ts';
import { monotonicMs, packetMark, packetMarksOn } from '../common/packetMarks.ts';
import { CpuWakeupLatency } from '../common/cpuWakeupLatency.ts';

export interface OrchestratorOptions {
  readonly log?: Logger;
  /** Restart a stage that dies after READY (default true). */
  readonly restartOnDeath?: boolean;
  /** How stage instances start (default: a forked process each). Tests pass in-process stand-ins. */
  readonly startWorker?: StartStageWorker;
  /** The id its stage reports are tagged with (Engine.id; default: a new one). A reloading engine keeps one. */
  readonly engineId?: string;
}

export class Orchestrator implements Engine {
  /** The machine's idle cores held to cpu_wakeup_latency_us while requests are live (null: not asked). */
  private readonly wakeups: CpuWakeupLatency | null;
  private readonly requests: RequestRegistry;
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
  private readonly pending: PendingAdmissions;
  /** Encoded media rows held per Thinker instance, within engine.media_rows_bytes (MediaRowsBudget.ts). */
  private readonly rows: MediaRowsBudget;

  readonly id: string;

  private constructor(
    readonly graph: StageGraph,
    private readonly tokenizer: Tokenizer,
    private readonly log: Logger,
    opts: OrchestratorOptions,
  ) {
    this.promptContext = promptContextOf(graph, tokenizer);
    this.id = opts.engineId ?? newEngineId();
    const wakeups = CpuWakeupLatency.asked(graph.cpuWakeupLatencyUs, log.child({ component: 'cpu-latency' }));
    this.wakeups = wakeups;
    this.requests = new RequestRegistry(wakeups ? (live) => (live ? wakeups.busy() : wakeups.idle()) : undefined);
    const startWorker = opts.startWorker ?? ((args, l) => StageWorker.start(args, l, LOCAL_STAGE));
    const restartOnDeath = opts.restartOnDeath ?? true;
    this.pool = new StagePool({ graph, startWorker, restartOnDeath, log, engineId: this.id });
    this.prefixRoutes = new PrefixRoutes(this.pool.instances);
    const ecWhere = (item: MediaItem) => ecEntryOf(this.ec, item);
    this.router = new Router(graph.routing, this.pool.instances, ecWhere, graph.kvPredictionMs);
    this.pool.on('ready', (view) => this.router.forget(view.instance));
    this.pool.on('stats', (view) => this.router.reported(view));
    this.pending = new PendingAdmissions({ graph, health: () => this.pool.health(), log });
    this.rows = mediaRowsBudgetOf(graph);
    this.pool.on('ready', () => this.pending.retry());
  }

  static async start(graph: StageGraph, opts: OrchestratorOptions = {}): Promise<Orchestrator> {
    setMainV8Flags();
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
      const migrations = new Migrations({ graph, pool, requests, log, audio, admitReplay });
      followPool(pool, o.requests, o.ec, migrations);
      // An item whose encode failed for memory or time, or whose store entry was lost, is encoded again.
      const reencodes = new Reencodes({
        pool,
        requests,
        log,
        policy: () => videoFitPolicy(o.promptContext),
        forgetLost: (record, item) => forgetLostItem(o.ec, record.prompt.items[item]),
        runAgain: (record, messages) => o.runAgain(record, messages),
      });
      pool.on('mediaRetry', (instance, msg) => reencodes.onRetry(instance, msg));
      // The Thinker let go of rows once prefilled: room for a request waiting for it.
      pool.on('mediaReleased', (_instance, msg) => {
        const record = requests.ofRun(msg.requestId);
        if (record && o.rows.releasePart(record.requestId, msg.bytes)) o.pending.retry();
      });
      await o.pool.start(o.provisioned.edges);
    } catch (err) {
      await o.close(0);
      throw err;
    }
    log.info({ stages: [...o.pool.instances.keys()], asyncChunk: graph.asyncChunk }, 'pipeline ready');
    return o;
  }

  generate(request: GenerateRequest): RequestHandle {
    const generatedAtMs = packetMarksOn() ? monotonicMs() : 0;
    const { requestId, prompt, messages, warnings } = this.validate(request);
    packetMark(requestId, 'generate', generatedAtMs);
    packetMark(requestId, 'tokenized');
    const admit = () => {
      this.rows.check(prompt, this.thinkerInstances());
      const { plan, book } = this.plan({ requestId, request, prompt });
      packetMark(requestId, 'routed');
      const record = this.commit(request, prompt, plan, book);
      record.messages = messages;
      record.stream.addWarnings(warnings);
      if (!record.stream.finished) this.rows.charge(requestId, plan.instances.get(this.graph.entryStageId)!, prompt);
      return handleOf(
        record,
        (reason) => this.cancel(requestId, reason),
        (p) => this.setPaused(requestId, p),
      );
    };
    try {
      return admit();
    } catch (err) {
      return this.pending.wait(err, requestId, request, prompt, admit);
    }
  }

  /** Refuses what cannot run, before anything is admitted: bad fields, a taken id, text or media that cannot fit. */
  private validate(request: GenerateRequest): {
    requestId: string;
    prompt: PreparedPrompt;
    messages: readonly ChatMessage[];
    warnings: readonly string[];
  } {
    if (this.closing) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine is shutting down');
    validateRequest(request);
    const requestId = request.requestId ?? `req-${randomBytes(8).toString('hex')}`;
    this.requests.checkFree(requestId);
    if (this.pending.holds(requestId))
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request id ${requestId} is already in use`);
    // A clip that does not fit is served with fewer or smaller frames (encoder.video.fallback), and the answer says so.
    const { prompt, messages, warnings } = fitPrompt(
      request.messages,
      (messages) => admissiblePrompt(messages, this.graph, this.promptContext, request.tools),
      (p) => this.rows.overBudget(p),
      videoFitPolicy(this.promptContext),
    );
    return { requestId, prompt: inPartition(prompt, request.cacheSalt), messages, warnings };
  }

  /** Routing and the EC store answer (they keep what they chose), then the admission is planned from their answers. */
  private plan(run: RequestToPlan) {
    const { graph, router, prefixRoutes, ec, audioOutput: audio } = this;
    const { requests, pool } = this;
    const live = {
      liveRequests: requests.load + 1,
      beforeFirstAudio: requests.beforeFirstAudio + 1,
      audio,
      framesPerToken: pool.framesPerToken,
    };
    return planRequest({ graph, router, prefixRoutes, ec, ...live }, run);
  }

  /** Acts on the plan: the request's record, what main expects back, the hold, the adds, then the media. */
  private commit(request: GenerateRequest, prompt: PreparedPrompt, plan: AdmissionPlan, book: RouteBooking) {
    const { graph, tokenizer, audioOutput: audio, ec, adapter, requests, pool, log } = this;
    const onEnd = (stream: RequestStream, reason: string) => this.onRequestEnd(requests.get(stream.requestId)!, reason);
    const ctx = { graph, tokenizer, audio, ec, adapter, requests, pool, log, onEnd };
    return commitRequest(ctx, request, prompt, plan, book);
  }

  /** A migrated request's replay (requests/Migrations.ts), admitted like the request was, as run `runId`. */
  private admitReplay(record: RequestRecord, runId: string): ReadonlyMap<string, string> {
    const { request, prompt, requestId } = record;
    // No encode skipped: a replay's client has tokens, so a wrong skip could not be mended by running it again.
    const run = { requestId: runId, request, prompt, replay: true, ecOwner: requestId, skipHeld: false };
    const planned = this.plan(run);
    const { graph, adapter, pool, log } = this;
    return commitReplay({ graph, adapter, pool, log }, record, runId, planned);
  }

  /**
   * Runs the request again from `messages` (an item encoded again: requests/Reencodes.ts) as its next run: planned
   * first (a throw leaves the failed run as it is), then the failed run is aborted on its stages and the new one
   * committed like a new request (hold, adds, media to its encoders); its rows are charged anew.
   */
  private runAgain(record: RequestRecord, messages: readonly ChatMessage[]): void {
    const { request, requestId } = record;
    const built = admissiblePrompt(messages, this.graph, this.promptContext, request.tools);
    const prompt = inPartition(built, request.cacheSalt);
    const runId = runIdOf(requestId, record.attempts + 1);
    const skipHeld = record.skipHeld;
    const { plan, book } = this.plan({ requestId: runId, request, prompt, ecOwner: requestId, skipHeld });
    tellStages(this.pool, record, 'abort');
    this.rows.release(requestId);
    record.rerun({ messages, prompt, media: plan.media?.routes ?? null, route: book() });
    const { graph, adapter, requests, pool, log } = this;
    commitRerun({ graph, adapter, requests, pool, log }, record, plan);
    this.rows.charge(requestId, plan.instances.get(this.graph.entryStageId)!, prompt);
  }

  /** The Thinker's instances that are up: where a request's rows may go. */
  private thinkerInstances(): string[] {
    const views = [...this.pool.instances.values()];
    return views
      .filter((v) => v.spec.stageId === this.graph.entryStageId && v.status === 'ready')
      .map((v) => v.instance);
  }

  promptPositions(messages: readonly ChatMessage[]): number {
    return promptPositionsOf(messages, this.graph, this.promptContext);
  }

  firstOutputEstimate(): FirstOutputEstimate | null {
    // Idle: a request starts at once, whatever the last ones met (and a refusal would never let a new sample in).
    if (this.requests.load === 0) return null;
    const entry = this.graph.stages.find((s) => s.stageId === this.graph.entryStageId)!;
    const estimate = this.router.estimate(entry, (runId) => this.requests.ofRun(runId)?.paused !== true);
    const audio = this.audioOutput;
    if (!estimate || !audio) return estimate;
    const frameMs = (audio.samplesPerFrame / audio.sampleRateHz) * 1000;
    return { ...estimate, audioPace: { stepMs: this.router.frameStepMs(entry), frameMs } };
  }

  releasePrefix(key: string): void {
    const instance = this.prefixRoutes.release(key);
    if (instance !== undefined) this.pool.send(instance, releasePrefixMessage(key));
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
    if (this.rows.release(record.requestId)) this.pending.retry(); // room for a request waiting for it
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
      this.pending.abandonAll({ code: ErrorCodes.SHUTTING_DOWN, message });
      await this.pool.stop(timeoutMs);
      this.requests.endAll({ code: ErrorCodes.SHUTTING_DOWN, message });
      await this.pool.close();
      await this.ec?.close(); // after the stages: none writes to Redis any more
      await this.adapter?.close();
      await this.connector?.close();
      this.provisioned?.release();
      this.wakeups?.close();
    })();
    return this.closing;
  }
}
