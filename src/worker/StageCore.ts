/**
 * The per-stage glue between control messages, the chunk adapter, a pure scheduler and a runner. Subclasses
 * (ThinkerCore, TalkerCore, Code2WavCore) implement admission, input arrival and one step; this base owns the
 * request table, sending, finishing and failing, so every stage ends requests the same way:
 *
 *   - finish: the last chunk to every target carries final=true and the finish reason (sent even when empty);
 *   - fail: an error final chunk goes to every target, so failure reaches every downstream stage in-band;
 *   - abort (from main): local state is dropped silently; main aborts every stage itself.
 *
 * Then state is freed and main hears `finished`. Nothing here blocks: sends are queued in the adapter.
 */
import {
  MAIN,
  type ChunkPolicy,
  type EcStoreSettings,
  type SchedulingPolicy,
  type StageSpec,
} from '../common/graph.ts';
import type { SamplingParams } from '../common/samplingParams.ts';
import type { FinishReason } from '../common/engine.ts';
import { ChorusError, ErrorCodes, serializeError, type SerializedError } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { ChunkBody } from '../common/payloads.ts';
import type {
  Arrival,
  ChunkTransferAdapter,
  LiveWait,
  OutgoingChunk,
  ReceivedChunk,
} from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { ModelWindow, StepItem, StepTrace } from './StepTrace.ts';
import { IdleWarmth } from './IdleWarmth.ts';
import type { StageSpans } from '../tracing/StageSpans.ts';
import type {
  AddRequest,
  DownstreamTarget,
  EdgeSample,
  StageStats,
  StageToMain,
  StepPhase,
  StepSample,
} from './messages.ts';
import { MAX_SAMPLES_PER_REPORT } from '../common/wireValues.ts';
import { processRuns } from '../common/processCpu.ts';

// MAX_SAMPLES_PER_REPORT: samples kept between two stats reports (250 ms apart): enough for histograms, bounded
// under any load (and what main's check of a report allows).

export interface StageContext {
  readonly spec: StageSpec;
  readonly chunkPolicy: ChunkPolicy;
  readonly asyncChunk: boolean;
  /** How the Talker and Code2Wav order work (StageGraph.scheduling). */
  readonly scheduling: SchedulingPolicy;
  readonly adapter: ChunkTransferAdapter;
  readonly post: (msg: StageToMain) => void;
  readonly log: Logger;
  /** The encoder-output store (StageGraph.ecStore): the Thinker keeps and takes media rows through it. */
  readonly ecStore?: EcStoreSettings | null;
  /** Wakes the step loop: for work that completes outside a step or a chunk arrival (an EC-store read). */
  readonly wake?: () => void;
  /** Records every step when CHORUS_STEP_TRACE_DIR asks for it (StepTrace.ts). */
  readonly stepTrace?: StepTrace | null;
  /** The request's spans when OTEL_* turns tracing on (src/tracing/StageSpans.ts). */
  readonly spans?: StageSpans | null;
  /**
   * The CPU time (ms) a decode step's cost is read from (src/sched/DecodeStepCost.ts): the stage process's, every
   * thread, by default. Tests give a clock their fake model advances, so a step costs what they say, whatever else
   * runs in their process (its GC threads made steps priced by process.cpuUsage read tens of ms high now and then).
   */
  readonly cpuClockMs?: () => number;
  /**
   * How long after its last step an idle stage of a kind that keeps warm (StageCore.keepsWarm) does so (ms; absent or
   * 0: never): IdleWarmth.ts KEEP_WARM_WINDOW_MS where the config holds the idle cores polling (stageMain.ts).
   */
  readonly keepWarmMs?: number;
}

export interface CoreRequest {
  readonly requestId: string;
  sampling: SamplingParams;
  readonly downstream: readonly DownstreamTarget[];
  numOutputs: number;
}

/**
 * R: the kind's request record; A: the kind's `add` arguments (AddRequest.args, declared in its protocol.ts). The
 * base reads neither beyond CoreRequest: what a kind needs to know stays in the kind's core.
 */
export abstract class StageCore<R extends CoreRequest = CoreRequest, A = unknown> {
  protected readonly requests = new Map<string, R>();
  protected lastBatchSize = 0;
  protected lastStepMs = 0;
  /**
   * Wall time spent in the steps recorded so far (ms): a clock that stands still while the stage idles, so that the
   * time between two outputs of one request read on it counts the steps it shared, not a stretch it was held back,
   * paced or waited for its input in (TalkerCore's frame latencies). Read during a step, it has not counted that one.
   */
  private steppingMs = 0;
  /** When the model is warmed (IdleWarmth.ts), for a kind that has warmModel: on an add, or kept warm while idle. */
  private readonly warmth: IdleWarmth;
  private batchSizes: number[] = [];
  private edgeSamples: EdgeSample[] = [];
  private steps: StepSample[] = [];
  /** The model run of the step in progress, when a step trace is on (timeModel). */
  private modelWindow: ModelWindow | null = null;
  /** The step just run asked for the next one at once (continueAtOnce). */
  private continuation = false;

  constructor(protected readonly ctx: StageContext) {
    this.warmth = new IdleWarmth(undefined, ctx.keepWarmMs ?? 0);
    const marks = ctx.stepTrace;
    if (marks) ctx.adapter.onPut = (requestId, to) => marks.mark('put', requestId, { to });
  }

  get size(): number {
    return this.requests.size;
  }

  /**
   * Whether the step just run asked for the next one at once, without the loop's turn of the event loop between them
   * (StageLoop), and clears the ask: the first piece of a split first prefill (ThinkerCore), whose second piece is on
   * the first packet's path.
   */
  takeContinuation(): boolean {
    const asked = this.continuation;
    this.continuation = false;
    return asked;
  }

  /** The kind's ask from within a step: the next step runs at once (takeContinuation). */
  protected continueAtOnce(): void {
    this.continuation = true;
  }

  add(msg: AddRequest<A>): void {
    if (this.requests.has(msg.requestId)) {
      this.ctx.log.warn({ requestId: msg.requestId }, 'duplicate add ignored');
      return;
    }
    // The stage span starts before admission, so what admission records (the Thinker's EC-store lookups) lies within
    // it; an add refused there ends it with the refusal.
    this.ctx.spans?.add(msg.requestId, msg.traceparent);
    this.ctx.stepTrace?.mark('add', msg.requestId);
    let req: R;
    try {
      req = this.admit(msg);
    } catch (err) {
      this.ctx.spans?.end(msg.requestId, 'error', serializeError(err));
      throw err;
    }
    this.requests.set(msg.requestId, req);
    for (const upstream of msg.upstreams) {
      this.ctx.adapter.expect(msg.requestId, {
        fromInstance: upstream.instance,
        fromStageId: upstream.stageId,
        keyStage: this.ctx.spec.stageId,
        firstChunkDeadline: upstream.firstChunkDeadline ?? msg.firstChunkDeadline,
        chunkTimeoutMs: upstream.chunkTimeoutMs ?? this.ctx.chunkPolicy.chunkTimeoutMs,
        ...(upstream.timeoutSetting ? { timeoutSetting: upstream.timeoutSetting } : {}),
        ...(upstream.pid !== undefined ? { live: this.liveWait(upstream.pid) } : {}),
      });
    }
    if (this.warmModel && !this.keepsWarm() && this.warmth.shouldWarm(performance.now())) this.warmIdleModel();
  }

  /**
   * The step loop's idle work for a kind that keeps warm (keepsWarm): its dummy step when one is due
   * (IdleWarmth.keepWarmAtMs), holding no request, unless the stage waited for a core meanwhile (`coreWaitMs`, asked
   * only when a step is due: IdleWarmth.coreFree). True when it ran one.
   */
  keepWarm(coreWaitMs: () => number = () => 0): boolean {
    const atMs = this.keepWarmAtMs();
    const startMs = performance.now();
    if (atMs === null || startMs < atMs || !this.warmth.coreFree(coreWaitMs(), startMs)) return false;
    this.warmIdleModel();
    this.warmth.keptWarm(startMs, performance.now());
    return true;
  }

  /** When (Date.now() ms) the idle step loop wakes for keepWarm; null: it need not. */
  keepWarmWakeAtMs(): number | null {
    const atMs = this.keepWarmAtMs();
    return atMs === null ? null : Date.now() + Math.max(0, atMs - performance.now());
  }

  private keepWarmAtMs(): number | null {
    return this.warmModel && this.keepsWarm() && this.requests.size === 0 ? this.warmth.keepWarmAtMs() : null;
  }

  /** A warm-up is for speed only: one that fails is logged and the request goes on (its own steps tell if it can). */
  private warmIdleModel(): void {
    try {
      this.warmModel?.();
    } catch (err) {
      this.ctx.log.warn({ err }, 'warming the idle model failed');
    }
  }

  /** Input chunks and receive errors, drained by the step loop before each schedule. */
  onArrivals(arrivals: readonly Arrival[]): void {
    for (const a of arrivals) {
      const req = this.requests.get(a.requestId);
      if (!req) continue; // aborted or failed meanwhile: late chunks are dropped
      if (a.error) {
        this.onUpstreamFailure(req, 'error', serializeError(a.error), a.fromStageId);
        continue;
      }
      const m = a.chunk.meta;
      if (this.edgeSamples.length < MAX_SAMPLES_PER_REPORT) {
        this.edgeSamples.push({
          from: m.from,
          to: m.to,
          latencyMs: a.chunk.receivedAtMs - m.sentAtMs,
          bytes: a.chunk.bytes,
        });
      }
      if (m.final && (m.finishReason === 'error' || m.finishReason === 'cancelled')) {
        // Upstream failed or was cancelled: pass it on in-band, do not compute on partial input.
        const err = m.error ?? { code: ErrorCodes.REQUEST_CANCELLED, message: `cancelled upstream in ${m.from}` };
        this.onUpstreamFailure(req, m.finishReason, err, m.from);
        continue;
      }
      this.ctx.spans?.arrival(a.requestId, m.from, m.sentAtMs, a.chunk.receivedAtMs, a.chunk.bytes, m.traceparent);
      this.ctx.stepTrace?.mark('in', a.requestId, { from: m.from, g: a.chunk.gotAtMs });
      this.onChunk(req, a.chunk);
    }
  }

  /** Main ended the request (cancel, or a failure elsewhere): drop everything, acknowledge with `finished`. */
  abort(requestId: string): void {
    const req = this.requests.get(requestId);
    if (!req) {
      // Not (or no longer) ours, e.g. a request of a previous incarnation of this stage: frames of it that are
      // still in the input rings must be dropped, not kept waiting for a get() that never comes.
      this.ctx.adapter.abandon(requestId);
      return;
    }
    this.release(req, 'cancelled');
    this.ctx.adapter.abandon(requestId);
    this.postFinished({ requestId, finishReason: 'cancelled', numTokens: req.numOutputs });
  }

  /**
   * Drops every request held without a word to main (which knows none of them: it booted this instance anew), and
   * every frame of them still waiting in the inputs; returns their ids.
   */
  dropAll(): string[] {
    const ids = [...this.requests.keys()];
    for (const id of ids) {
      this.release(this.requests.get(id)!, 'dropped');
      this.ctx.adapter.cancel(id);
    }
    return ids;
  }

  /**
   * An upstream stream of the request broke (receive error, e.g. a deadline) or ended with an error or a cancel.
   * By default the request ends here too, in-band to every target; the Thinker overrides it for encoder
   * upstreams, whose failure may only cost the media item (on_encoder_failure: text_only).
   */
  protected onUpstreamFailure(
    req: R,
    reason: FinishReason,
    error: SerializedError,
    _fromStageId: string | undefined,
  ): void {
    this.failWith(req, reason, error);
  }

  /**
   * A message of this stage's kind from main (`{type: 'kind'}`: the Thinker's first_audio, media_failed,
   * release_prefix). Its body is unchecked: the kind's protocol.ts reads it. A kind ignores what is not its own:
   * main sends some events (first_audio) to every stage of a request without knowing which kinds care.
   */
  onKindMessage(_requestId: string | undefined, _body: unknown): void {}

  /** When the step loop must run again even if nothing arrives (a batch timeout); null = only on arrivals. */
  nextWakeAtMs(): number | null {
    return null;
  }

  /** Releases what the core holds beyond its runner (connections); the stage closes it after the loop ends. */
  async close(): Promise<void> {}

  abstract pause(requestId: string): void;
  abstract resume(requestId: string): void;

  /** Runs one scheduling step; returns false when there was nothing to run. */
  abstract step(): boolean;

  /** Reports load and the samples gathered since the previous call. */
  stats(): StageStats {
    const stats = {
      queueDepth: this.queueDepth(),
      running: this.requests.size,
      batchSize: this.lastBatchSize,
      stepMs: this.lastStepMs,
      batchSizes: this.batchSizes,
      edgeSamples: this.edgeSamples,
      steps: this.steps,
    };
    this.batchSizes = [];
    this.edgeSamples = [];
    this.steps = [];
    return stats;
  }

  /**
   * Subclasses call this after every executed step; items (called only when a step trace is on) are the requests it
   * served and the positions each took; phase is what the step did (the autoregressive stages tell prefill from
   * decode, /metrics' chorus_stage_step_seconds).
   */
  protected recordStep(
    batchSize: number,
    startedAtMs: number,
    items: () => readonly StepItem[],
    phase: StepPhase = 'run',
  ): void {
    if (this.ctx.stepTrace || this.ctx.spans) {
      const served = items();
      this.ctx.stepTrace?.record(startedAtMs, served, this.modelWindow);
      this.modelWindow = null;
      this.ctx.spans?.step(phase, startedAtMs, served);
    }
    this.lastBatchSize = batchSize;
    const endedAtMs = performance.now();
    this.lastStepMs = endedAtMs - startedAtMs;
    this.steppingMs += this.lastStepMs;
    this.warmth.stepped(endedAtMs);
    if (this.batchSizes.length < MAX_SAMPLES_PER_REPORT) this.batchSizes.push(batchSize);
    if (this.steps.length < MAX_SAMPLES_PER_REPORT) this.steps.push({ phase, ms: this.lastStepMs });
  }

  /** The stepping clock (ms): wall time in the steps recorded so far (recordStep). */
  protected get steppingClockMs(): number {
    return this.steppingMs;
  }

  /** Runs the step's model, noting its window for the step trace (the account's model compute) when one is on. */
  protected timeModel<T>(run: () => T): T {
    if (!this.ctx.stepTrace) return run();
    const startedAtMs = performance.now();
    const cpu0 = process.cpuUsage();
    try {
      return run();
    } finally {
      const cpu = process.cpuUsage(cpu0);
      this.modelWindow = { startedAtMs, endedAtMs: performance.now(), cpuMs: (cpu.user + cpu.system) / 1000 };
    }
  }

  protected abstract admit(msg: AddRequest<A>): R;
  /**
   * Kinds whose add comes before their input (the Talker's, Code2Wav's) run a dummy step here when an add finds the
   * stage idle (IdleWarmth.ts), so the request's own steps find the model's weights in the caches.
   */
  protected warmModel?(): void;
  /**
   * A kind that computes at its add (the Thinker, the entry stage) warms no model there, which would delay its own
   * first step: it keeps warm while idle instead, for StageContext.keepWarmMs after its last step (IdleWarmth.ts).
   */
  protected keepsWarm(): boolean {
    return false;
  }
  protected abstract onChunk(req: R, chunk: ReceivedChunk): void;
  /** Frees scheduler and runner state of a request (finish, fail and abort all end here). */
  protected abstract freeState(req: R): void;
  protected abstract queueDepth(): number;

  /** Sends a non-final chunk to the targets that match. */
  protected send(req: R, targets: readonly DownstreamTarget[], body: ChunkBody): void {
    for (const t of targets) this.put(req, t, { final: false, body });
  }

  /** Sends the last chunk (final=true, with a body or without) to every target, then frees the request. */
  protected finish(
    req: R,
    reason: FinishReason,
    lastBody: (t: DownstreamTarget) => ChunkBody | undefined = () => undefined,
  ): void {
    const warnings = this.warningsOf(req);
    this.putFinal(req, reason, (t) => ({ body: lastBody(t) }), warnings.length > 0 ? { warnings } : {});
    this.release(req, reason);
  }

  /** What the request's output leaves out, reported to main with `finished` (the Thinker's dropped media). */
  protected warningsOf(_req: R): readonly string[] {
    return [];
  }

  protected fail(req: R, err: unknown): void {
    this.failWith(req, 'error', serializeError(err));
  }

  protected failWith(req: R, reason: FinishReason, error: SerializedError): void {
    this.ctx.log.debug({ requestId: req.requestId, code: error.code }, 'request ended upstream or failed here');
    this.putFinal(req, reason, () => ({ error }), { error });
    this.release(req, reason, error);
    this.ctx.adapter.cancel(req.requestId);
  }

  /**
   * The request's final chunk to every target (`last`: what it carries besides), and `finished` to main once every
   * one of them is put or failed: main must not see the request end before its last chunks are on their way.
   */
  private putFinal(
    req: R,
    reason: FinishReason,
    last: (t: DownstreamTarget) => Pick<OutgoingChunk, 'body' | 'error'>,
    report: { readonly warnings?: readonly string[]; readonly error?: SerializedError },
  ): void {
    const puts = req.downstream.map((t) => this.put(req, t, { final: true, finishReason: reason, ...last(t) }));
    void Promise.allSettled(puts).then(() =>
      this.postFinished({ requestId: req.requestId, finishReason: reason, numTokens: req.numOutputs, ...report }),
    );
  }

  /** `finished` to main, the step trace's lines written first (StepTrace: a reader after the answer finds them). */
  private postFinished(msg: Omit<Extract<StageToMain, { type: 'finished' }>, 'type'>): void {
    this.ctx.stepTrace?.flush();
    this.ctx.post({ type: 'finished', ...msg });
  }

  /**
   * An upstream on this host is live while its process runs (not stopped, not gone): one starved of CPU is slow, not
   * lost. Main's hang watch fails the request on every stage when that process is hung (its CPU, run queue and state).
   */
  private liveWait(pid: number): LiveWait {
    return { producer: () => processRuns(pid), maxWaitMs: this.ctx.chunkPolicy.maxChunkWaitMs };
  }

  private release(req: R, status: string, error?: SerializedError): void {
    if (!this.requests.delete(req.requestId)) return;
    this.ctx.spans?.end(req.requestId, status, error);
    this.freeState(req);
  }

  private put(req: R, t: DownstreamTarget, chunk: OutgoingChunk): Promise<void> {
    // Main's one inbox takes every output stage's stream: a chunk to main is keyed (and numbered) by its sender.
    const keyStage = t.stageId === MAIN ? this.ctx.spec.stageId : t.stageId;
    const deadline = Date.now() + this.ctx.chunkPolicy.chunkTimeoutMs;
    const traceparent = this.ctx.spans?.chunkOut(req.requestId, t.stageId);
    const sent = traceparent ? { ...chunk, traceparent } : chunk;
    this.ctx.stepTrace?.mark('out', req.requestId, { to: t.stageId });
    return this.ctx.adapter
      .saveAsync(req.requestId, { toInstance: t.instance, toStageId: t.stageId, keyStage }, sent, deadline)
      .catch((err: unknown) => {
        // The edge is full past its deadline or closed: the request cannot continue in this stage.
        this.ctx.log.warn({ requestId: req.requestId, to: t.instance, err: String(err) }, 'chunk send failed');
        if (this.requests.has(req.requestId))
          this.fail(
            req,
            new ChorusError(ErrorCodes.BACKPRESSURE_TIMEOUT, `sending to ${t.instance} failed: ${String(err)}`, {
              cause: err,
            }),
          );
      });
  }
}
