/**
 * Runs a stage graph: provisions the edges (shared-memory rings owned here), starts one supervised process per
 * stage replica, admits requests, routes them to replicas, assembles their output streams, and handles cancel,
 * pause, stage death (fail that stage's in-flight requests, restart it; StageEvents.ts) and shutdown (drain,
 * stop, unlink).
 */
import { cpusFor, pinThisProcess } from '../common/affinity.ts';
import { randomBytes } from 'node:crypto';
import type { StageGraph, StageSpec } from '../common/graph.ts';
import { ChorusError, ErrorCodes, serializeError } from '../common/errors.ts';
import { diagnostics } from '../common/diagnostics.ts';
import { logger, type Logger } from '../common/log.ts';
import type { AudioOutputFacts, ModelFacts } from '../common/modelFacts.ts';
import { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import { createConnector, provisionEdges, type ProvisionedEdges } from '../../transport/createConnector.ts';
import type { Connector } from '../../transport/Connector.ts';
import { DEFAULT_RING_BYTES, ringBytesOf } from '../../transport/registry.ts';
import { ShmRing } from '../../transport/shm/ShmRing.ts';
import { createTokenizer, StreamingDetokenizer, type Tokenizer } from '../../stages/tokenizer/index.ts';
import type { EdgeBinding } from '../worker/messages.ts';
import { StageWorker } from '../worker/StageWorker.ts';
import { edgeTouches } from '../../transport/edges.ts';
import { RemoteStages, type RemoteStageHandle } from './RemoteStages.ts';
import { healthOf, newSlot, type Slot } from './Slot.ts';
import { stageAdds, upstreamSources } from './stageAdds.ts';
import { Router } from './routing/Router.ts';
import { MediaRoutes } from './MediaRoutes.ts';
import { EcStore } from './ec/EcStore.ts';
import { ecEntryOf, modalitiesToEncode, planEcItems } from './ec/ecPlan.ts';
import { PrefixRoutes } from './PrefixRoutes.ts';
import { HangWatch } from './HangWatch.ts';
import { StageEvents } from './StageEvents.ts';
import { STAGE_ENTRY, type StageWorkerHandle, type StartStageWorker } from './stageWorkers.ts';
import { checkPromptFits, encodersOf, placeholderIds, preparePrompt, type PromptContext } from './mediaPrompt.ts';
import { encoderConnector, instanceId, MAIN, planEdges, stagesFor } from './planEdges.ts';
import { playbackPlan } from './playbackPlan.ts';
import { FirstPacketHolds } from './FirstPacketHolds.ts';
import { RequestStream } from './RequestStream.ts';
import type { ChatMessage, Engine, GenerateRequest, RequestHandle, StageHealth } from '../common/engine.ts';
import { validateRequest } from './validateRequest.ts';
import {
  BYTES_PER_POSITION,
  checkPromptBytes,
  promptByteLimit,
  textBytes,
  thinkerPositions,
} from '../common/promptBytes.ts';

export interface OrchestratorOptions {
  readonly log?: Logger;
  /** Restart a stage that dies after READY (default true). */
  readonly restartOnDeath?: boolean;
  /** How stage instances start (default: a forked process each). Tests pass in-process stand-ins. */
  readonly startWorker?: StartStageWorker;
}

export class Orchestrator implements Engine {
  private readonly slots = new Map<string, Slot>();
  private readonly live = new Map<string, RequestStream>();
  /**
   * Live requests paused for their clients: they hold no batch slot in the stages, so they are not load either (16
   * paused readers counted as load made every other first chunk 25 frames instead of 2, and turned its hold off).
   */
  private readonly paused = new Set<string>();
  private adapter!: ChunkTransferAdapter;
  private connector!: Connector;
  private provisioned!: ProvisionedEdges;
  private closing: Promise<void> | null = null;
  private hangWatch: NodeJS.Timeout | null = null;
  private remote: RemoteStages | null = null;
  /** The encoder-output store (ec_store:), null without one. */
  private ec: EcStore | null = null;
  private readonly hangs: HangWatch;
  private readonly promptContext: PromptContext;
  private readonly media: MediaRoutes;
  private readonly prefixRoutes = new PrefixRoutes(this.slots);
  private readonly router: Router;
  private readonly events: StageEvents;
  /** Kept from the vocoder's first READY: a restarting vocoder must not make usage forget the audio format. */
  private audioFacts: Omit<AudioOutputFacts, 'framesPerToken'> | null = null;
  private framesPerToken: number | null = null;
  private readonly holds = new FirstPacketHolds();

  private constructor(
    readonly graph: StageGraph,
    private readonly tokenizer: Tokenizer,
    private readonly log: Logger,
    private readonly restartOnDeath: boolean,
    private readonly startWorker: StartStageWorker,
  ) {
    const encoders = encodersOf(graph);
    // An item travels to its encoder as one frame: it must fit the smallest ring it may cross, with room to spare.
    const ringBytes = [...encoders.values()].map((e) => ringBytesOf(graph.connectors[encoderConnector(graph, e)]));
    this.promptContext = {
      tokenizer,
      placeholders: placeholderIds(tokenizer),
      encoders,
      maxItemBytes: Math.floor(Math.min(DEFAULT_RING_BYTES, ...ringBytes) / 2),
    };
    this.media = new MediaRoutes(log, graph.chunkPolicy.chunkTimeoutMs);
    this.hangs = new HangWatch(graph.stageHangMs);
    this.router = new Router(graph.routing, this.slots, (item) => ecEntryOf(this.ec, item));
    this.events = new StageEvents({
      slots: this.slots,
      live: this.live,
      media: this.media,
      router: this.router,
      hangs: this.hangs,
      log,
      ec: () => this.ec,
      restarts: () => !this.closing && this.restartOnDeath,
      boot: (slot) => this.boot(slot),
    });
  }

  static async start(graph: StageGraph, opts: OrchestratorOptions = {}): Promise<Orchestrator> {
    const log = opts.log ?? logger.child({ component: 'orchestrator' });
    const entry = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
    const tokenizer = await createTokenizer(
      entry.model,
      entry.model.source === 'generated' && entry.model.kind === 'thinker' ? entry.model.size.vocabSize : undefined,
    );
    const startWorker = opts.startWorker ?? ((args, l) => StageWorker.start(args, l, { entry: STAGE_ENTRY }));
    const o = new Orchestrator(graph, tokenizer, log, opts.restartOnDeath ?? true, startWorker);
    for (const warning of graph.warnings ?? []) log.warn({ file: graph.file }, warning);
    // Main (and the stage processes it forks, until they place themselves) off the cores stages reserved.
    pinThisProcess(cpusFor(graph, null), log);
    // Segments left by a Chorus process that died without cleaning up (its pid is gone) are removed first.
    const swept = ShmRing.sweepStaleSegments();
    if (swept.length > 0) log.warn({ segments: swept }, 'removed shared memory left by dead Chorus processes');
    o.provisioned = await provisionEdges(graph, planEdges(graph));
    try {
      if (graph.ecStore) o.ec = await EcStore.open(graph.ecStore, log.child({ component: 'ec-store' }));
      o.connector = await createConnector(graph, MAIN, o.provisioned.edges);
      o.adapter = new ChunkTransferAdapter(o.connector, MAIN, MAIN, () => queueMicrotask(() => o.drainOutputs()));
      graph.stages.forEach((spec, stageIndex) => {
        for (let replica = 0; replica < spec.replicas; replica++) {
          const instance = instanceId(spec.stageId, replica);
          o.slots.set(instance, newSlot(graph, stageIndex, replica, instance));
        }
      });
      // Wait for every boot to settle, not just the first failure: a stage still booting when another fails must
      // be stopped too, or it would outlive start-up as an orphan.
      const boots = await Promise.allSettled([...o.slots.values()].map((slot) => o.boot(slot)));
      const failed = boots.find((b): b is PromiseRejectedResult => b.status === 'rejected');
      if (failed) throw failed.reason;
      o.remote = await RemoteStages.open(graph, (instance) => o.edgesOf(instance), log);
      o.remote?.on('joined', (handle) => o.join(handle));
    } catch (err) {
      await o.close(0);
      throw err;
    }
    o.hangWatch = setInterval(() => o.events.checkHangs(), o.hangs.intervalMs).unref();
    log.info({ stages: [...o.slots.keys()], asyncChunk: graph.asyncChunk }, 'pipeline ready');
    return o;
  }

  private async boot(slot: Slot): Promise<void> {
    slot.bootStartedAtMs = performance.now();
    const worker = await this.startWorker(
      { graph: this.graph, stageIndex: slot.stageIndex, replica: slot.replica, edges: this.edgesOf(slot.instance) },
      this.log,
    );
    slot.worker = worker;
    slot.status = 'ready';
    slot.lastBootMs = performance.now() - slot.bootStartedAtMs;
    slot.lastHeardMs = Date.now();
    slot.cpuSamples = [];
    slot.cpuTicksWhenHeard = null;
    this.noteFacts(slot.spec.stageId, worker.settings?.facts);
    worker.on('message', (msg) => this.events.onMessage(slot, msg));
    worker.on('died', (info) => this.events.onDied(slot, info));
  }

  private edgesOf(instance: string): EdgeBinding[] {
    return this.provisioned.edges.filter((e) => edgeTouches(e, instance));
  }

  /** What the pipeline's audio is, from the first vocoder and Talker to report (replicas run one model). */
  private noteFacts(stageId: string, facts: ModelFacts | undefined): void {
    if (facts?.kind === 'encoder') this.ec?.noteEncoder(stageId, facts.identity);
    if (facts?.kind === 'talker') this.framesPerToken ??= facts.framesPerToken;
    if (facts?.kind === 'code2wav')
      this.audioFacts ??= { sampleRateHz: facts.sampleRateHz, samplesPerFrame: facts.samplesPerFrame };
  }

  /** An instance from another machine joined (READY): it takes requests like a local replica. */
  private join(handle: RemoteStageHandle): void {
    this.noteFacts(handle.heartbeat.stageId, handle.settings?.facts);
    const stageIndex = this.graph.stages.findIndex((s) => s.stageId === handle.heartbeat.stageId);
    const spec = this.graph.stages[stageIndex];
    const replica = spec.replicas + [...this.slots.values()].filter((s) => s.spec === spec && s.remote).length;
    const slot = newSlot(this.graph, stageIndex, replica, handle.heartbeat.instance, handle);
    this.slots.set(slot.instance, slot);
    handle.on('message', (msg) => this.events.onMessage(slot, msg));
    handle.on('died', () => this.events.onRemoteLost(slot, handle));
  }

  // ------------------------------------------------------------------------------------------------ requests

  generate(request: GenerateRequest): RequestHandle {
    if (this.closing) throw new ChorusError(ErrorCodes.SHUTTING_DOWN, 'the engine is shutting down');
    validateRequest(request);
    const requestId = request.requestId ?? `req-${randomBytes(8).toString('hex')}`;
    if (this.live.has(requestId))
      throw new ChorusError(ErrorCodes.REQUEST_INVALID, `request id ${requestId} is already in use`);
    // Before tokenizing (on this event loop): text that cannot fit is refused without the work.
    checkPromptBytes(request.messages, this.graph);
    // Media items are probed here (headers only) and refused before anything is admitted.
    const prompt = preparePrompt(request.messages, this.promptContext);
    checkPromptFits(prompt, this.graph);
    // Routing sees every item (the store's hits cost its Thinker choices nothing); the chosen Thinker's hits then
    // need no encoder, so stages whose items all hit are left out.
    const routedStages = stagesFor(this.graph, request.modalities, [...new Set(prompt.items.map((i) => i.modality))]);
    const key = (s: StageSpec) => (s.stageId === this.graph.entryStageId ? request.prefix?.key : undefined);
    const routed = this.router.route(requestId, this.graph.entryStageId, routedStages, prompt, (s, pick) =>
      this.prefixRoutes.pick(s, key(s), pick),
    );
    const thinker = routed.get(this.graph.entryStageId)!;
    const ec = planEcItems(this.ec, requestId, prompt, thinker.instance);
    const stages = stagesFor(this.graph, request.modalities, modalitiesToEncode(prompt, ec));
    const chosen = new Map(stages.map((s) => [s.stageId, routed.get(s.stageId)!]));
    const promptTokenIds = prompt.promptTokenIds;
    const outputs = stages.filter(
      (s) => s.finalOutput && s.finalOutputType && request.modalities.includes(s.finalOutputType),
    );
    const promptItems = prompt.items.map((i) => ({ modality: i.modality, numEmbeddings: i.numEmbeddings }));
    const stream = new RequestStream(
      requestId,
      new Map([...chosen].map(([id, slot]) => [id, slot.instance])),
      outputs.map((s) => ({ stageId: s.stageId, type: s.finalOutputType! })),
      promptTokenIds.length,
      promptItems,
      new StreamingDetokenizer(this.tokenizer, { promptIds: promptTokenIds }),
      request.modalities.includes('audio') ? this.audioOutput : null,
      (s, reason) => this.onRequestEnd(s, reason),
      request.ttfpTargetMs ?? this.graph.chunkPolicy.ttfpTargetMs,
    );
    this.live.set(requestId, stream);
    // With media, the Thinker's first output may wait for the slowest encoder's timeout first.
    const admittedAtMs = Date.now();
    // A reduce, not a spread: a body of tiny images can hold more items than a call has room for arguments.
    const encoderTimeoutMs = prompt.items.reduce((most, i) => Math.max(most, i.encoder.encoder!.timeoutMs), 0);
    const firstChunkDeadline = admittedAtMs + encoderTimeoutMs + this.graph.chunkPolicy.chunkTimeoutMs;
    for (const s of outputs) {
      this.adapter.expect(requestId, {
        fromInstance: chosen.get(s.stageId)!.instance,
        fromStageId: s.stageId,
        keyStage: s.stageId,
        firstChunkDeadline,
        chunkTimeoutMs: this.graph.chunkPolicy.chunkTimeoutMs,
      });
    }
    const instanceOf = upstreamSources(this.graph, chosen, admittedAtMs);
    const plan = this.media.plan(requestId, prompt, instanceOf(this.graph.entryStageId), instanceOf, ec);
    const hold = this.firstPacketHold(request, stream);
    const adds = stageAdds({
      requestId,
      request,
      graph: this.graph,
      stages,
      outputs,
      chosen,
      promptTokenIds,
      media: plan,
      ecDrop: this.ec?.takeDrops(thinker.instance) ?? [],
      upstreamOf: instanceOf,
      liveRequests: this.live.size - this.paused.size,
      firstPacketTokens: hold,
      firstChunkDeadline,
      playback: playbackPlan(request, this.graph, this.audioOutput, admittedAtMs, chosen.values()),
    });
    for (const { slot, add } of adds) {
      slot.inFlight.add(requestId);
      slot.worker!.send(add);
    }
    if (plan)
      this.media.sendItems(
        requestId,
        prompt,
        instanceOf,
        this.adapter,
        (err) => stream.end('error', serializeError(err)),
        ec,
      );
    diagnostics.requestStart.publish({
      requestId,
      modalities: request.modalities,
      promptTokens: promptTokenIds.length,
      mediaItems: prompt.items.length,
    });
    return {
      requestId,
      prompt: stream.promptTokenDetails(),
      events: stream.events.events,
      cancel: (reason?: string) => this.cancel(requestId, reason),
      pause: () => this.setPaused(requestId, true),
      resume: () => this.setPaused(requestId, false),
    };
  }

  /**
   * The first-packet hold of a request with audio out (FirstPacketHolds), undefined for none; with one, the
   * stream's first audio (or its audio ending without any, or load arriving) tells the Thinker to go on.
   */
  private firstPacketHold(request: GenerateRequest, stream: RequestStream): number | undefined {
    // With async_chunk off the Talker gets its rows when the Thinker ends: a hold would wait forever.
    if (!this.graph.asyncChunk || this.framesPerToken === null) return undefined;
    const { requestId } = stream;
    const tokens = this.holds.admit(
      requestId,
      {
        policy: this.graph.chunkPolicy,
        liveRequests: this.live.size - this.paused.size,
        framesPerToken: this.framesPerToken,
        audio: request.modalities.includes('audio'),
        initialCodecChunkFrames: request.initialCodecChunkFrames,
      },
      // To the Talker too: one released before its first chunk is sized may size it for the load again.
      () => this.broadcast(requestId, 'first_audio'),
    );
    if (tokens !== undefined) stream.onAudioStarted = () => this.holds.release(requestId);
    return tokens;
  }

  promptPositions(messages: readonly ChatMessage[]): number {
    // Text over the byte bound cannot fit: more positions than the Thinker has, said without tokenizing it here.
    const bytes = textBytes(messages);
    if (bytes > promptByteLimit(thinkerPositions(this.graph))) return Math.ceil(bytes / BYTES_PER_POSITION);
    return preparePrompt(messages, this.promptContext).promptTokenIds.length;
  }

  releasePrefix(key: string): void {
    this.prefixRoutes.release(key)?.worker?.send({ type: 'release_prefix', key });
  }

  /** Ends a request as cancelled; `reason` says who or what cancelled it (default: the client). */
  cancel(requestId: string, reason = 'cancelled by the client'): void {
    const stream = this.live.get(requestId);
    if (!stream || stream.finished) return;
    stream.end('cancelled', { code: ErrorCodes.REQUEST_CANCELLED, message: reason });
  }

  private setPaused(requestId: string, paused: boolean): void {
    if (!this.live.has(requestId)) return;
    if (paused) this.paused.add(requestId);
    else this.paused.delete(requestId);
    this.broadcast(requestId, paused ? 'pause' : 'resume');
  }

  private broadcast(requestId: string, type: 'pause' | 'resume' | 'abort' | 'first_audio'): void {
    const stream = this.live.get(requestId);
    if (!stream) return;
    for (const instance of stream.stageInstances.values()) {
      const slot = this.slots.get(instance);
      slot?.worker?.send(type === 'abort' ? { type, requestId, reason: 'ended' } : { type, requestId });
    }
  }

  /** Every ending goes through here once: stages drop the request's state, main drops its receive state. */
  private onRequestEnd(stream: RequestStream, reason: string): void {
    if (reason === 'cancelled' || reason === 'error') this.broadcast(stream.requestId, 'abort');
    else this.abortEncoders(stream);
    this.media.forget(stream.requestId);
    this.holds.forget(stream.requestId);
    this.router.forget(stream.requestId);
    this.ec?.release(stream.requestId);
    this.adapter.cancel(stream.requestId);
    this.live.delete(stream.requestId);
    this.paused.delete(stream.requestId);
    diagnostics.requestEnd.publish({
      requestId: stream.requestId,
      reason,
      startedAtMs: stream.startedAtMs,
      firstTextAtMs: stream.firstTextAtMs,
      firstAudioAtMs: stream.firstAudioAtMs,
    });
  }

  /** An answer can finish while an encoder still works on it (its item was dropped, text_only): stop that work. */
  private abortEncoders(stream: RequestStream): void {
    for (const instance of stream.stageInstances.values()) {
      const slot = this.slots.get(instance);
      if (slot?.spec.encoder && slot.inFlight.has(stream.requestId))
        slot.worker?.send({ type: 'abort', requestId: stream.requestId, reason: 'ended' });
    }
  }

  private drainOutputs(): void {
    for (const a of this.adapter.processPendingChunks()) {
      const stream = this.live.get(a.requestId);
      if (!stream) continue;
      if (a.error) {
        stream.end('error', serializeError(a.error));
        continue;
      }
      const m = a.chunk.meta;
      if (diagnostics.edgeChunk.hasSubscribers) {
        diagnostics.edgeChunk.publish({
          from: m.from,
          to: MAIN,
          latencyMs: a.chunk.receivedAtMs - m.sentAtMs,
          bytes: a.chunk.bytes,
        });
      }
      stream.onChunk(m.from, a.chunk);
      if (stream.firstTextAtMs !== null) this.router.firstToken(a.requestId, stream.firstTextAtMs);
    }
  }

  health(): StageHealth[] {
    return healthOf(this.graph, [...this.slots.values()]);
  }

  /**
   * The audio this pipeline returns, as its vocoder reported when it came up (READY facts); null without one.
   * Replicas of one stage run one model, so the first ready instance speaks for all.
   */
  get audioOutput(): AudioOutputFacts | null {
    return this.audioFacts && { ...this.audioFacts, framesPerToken: this.framesPerToken };
  }

  /** The encoder-output store (null without `ec_store:`): routing asks it where an item's rows are. */
  get ecStore(): EcStore | null {
    return this.ec;
  }

  /** For tests and tools: the live worker of an instance. */
  workerOf(instance: string): StageWorkerHandle | null {
    return this.slots.get(instance)?.worker ?? null;
  }

  close(timeoutMs = 10_000): Promise<void> {
    this.closing ??= (async () => {
      if (this.hangWatch) clearInterval(this.hangWatch);
      await Promise.all(
        [...this.slots.values()].map(async (slot) => {
          await slot.worker?.shutdown(timeoutMs);
          slot.status = 'stopped';
        }),
      );
      for (const stream of this.live.values())
        stream.end('error', {
          code: ErrorCodes.SHUTTING_DOWN,
          message: 'the engine shut down before the request finished',
        });
      await this.remote?.close();
      await this.ec?.close(); // after the stages: none writes to Redis any more
      await this.adapter?.close();
      await this.connector?.close();
      this.provisioned?.release();
    })();
    return this.closing;
  }
}
