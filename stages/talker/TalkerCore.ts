/**
 * The Talker stage: autoregressive codec frames conditioned on Thinker rows, one frame (16 codes) per step.
 * Positions: 0..P-1 are the prompt rows, P is the first token's row (prefill ends there and samples frame 0);
 * position P+k (k >= 1) feeds the row of text token floor(k / framesPerToken) and samples frame k. A frame whose
 * row has not arrived yet leaves the request WAITING_FOR_CHUNK. When the Thinker has finished, the Talker stops
 * after framesPerToken frames per text token (or at end-of-speech, or max_tokens frames).
 */
import type { ScheduledItem } from '../../src/sched/ArScheduler.ts';
import { firstChunkCap, initialChunkForTarget, initialChunkFrames } from '../../src/sched/chunkPolicy.ts';
import { Ewma } from '../../src/sched/playback.ts';
import { modelRoot } from '../../src/sched/blockNames.ts';
import type { TalkerBatchItem, TalkerRunner, TalkerStepOutput } from '../types.ts';
import { Talker2Code2Wav } from '../code2wav/talker2code2wav.ts';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import type { CodecFramesBody } from '../../src/common/payloads.ts';
import type { AddRequest, PlaybackPlan, StageStats } from '../../src/worker/messages.ts';
import type { CoreRequest, StageContext } from '../../src/worker/StageCore.ts';
import { ArStageCore } from '../../src/worker/ArStageCore.ts';
import { isFirstAudio } from '../requestEvents.ts';
import type { TalkerArgs, TalkerStats } from './protocol.ts';
import { TalkerPrefixCache } from './TalkerPrefixCache.ts';

interface TalkerRequest extends CoreRequest {
  /** Per-request override of the initial codec chunk (TalkerArgs). */
  readonly initialCodecChunkFrames?: number;
  readonly liveAtAdmission: number;
  /**
   * TalkerArgs.firstPacketTokens: the Thinker holds after these tokens until the first audio is out; undefined once
   * main has ended the hold (then the first chunk is sized for the load alone).
   */
  firstPacketTokens: number | undefined;
  /** TalkerArgs.codecLeftContextFrames (undefined: the chunk policy's). */
  readonly leftContextFrames: number | undefined;
  /** AddRequest.cacheSalt: the prompt's blocks are named within it. */
  readonly cacheSalt: string | undefined;
  rows: Float32Array; // arrived conditioning rows, row-major; grows by doubling (no re-concatenation per arrival)
  numRows: number;
  promptRows: number | null; // known from the first chunk
  thinkerDone: FinishReason | null;
  framesSampled: number;
  toCode2Wav: Talker2Code2Wav | null;
  readonly playback: PlaybackPlan | null;
  /** When the first codec chunk left for Code2Wav (epoch ms): the listener's playback starts about then. */
  firstSentAtMs: number | null;
  /**
   * When the first rows arrived (epoch ms), and the stepping clock when the last frame was sampled
   * (StageCore.steppingClockMs): the measured frame latencies.
   */
  rowsAtMs: number | null;
  lastFrameSteppingMs: number | null;
  /** The block names of its prompt rows, looked up in the prefix cache before its first step (null: not yet). */
  promptBlocks: readonly string[] | null;
}

/** The share of the time left to a TTFP target that the first chunk is planned to fill. */
const TARGET_PLANNING_SHARE = 0.6;

export class TalkerCore extends ArStageCore<TalkerRequest, TalkerArgs, TalkerBatchItem, TalkerStepOutput> {
  private readonly dim: number;
  /**
   * Latencies as requests see them (steps under the CPU the other stages take), each per running request (they grow
   * about linearly with the requests sharing the CPU), so a burst is planned at its own load: first rows -> frame 0
   * (the prompt prefill, wall clock), and frame k -> frame k + 1 on the stepping clock (StageCore.steppingClockMs).
   * On the wall clock a frame interval counted the seconds an answer was paced to its speech (SpeechLead.ts) or held
   * back, 60-120 ms a frame for a few steps after every catch-up of sixteen long answers: then every lead looked
   * short, and first audio first held nothing back for a newcomer (bench/NOTES.md, "Pauses counted as frame time").
   */
  private readonly firstFrameMs = new Ewma();
  private readonly frameIntervalMs = new Ewma();
  /** Its prompt rows' KV, shared by requests whose prompts start alike (a conversation's turns): null when off. */
  private readonly prefixes: TalkerPrefixCache | null;

  constructor(
    ctx: StageContext,
    private readonly runner: TalkerRunner,
  ) {
    super(ctx, runner, ctx.scheduling);
    this.dim = runner.conditionDim;
    const settings = ctx.spec.engine.prefixCache;
    this.prefixes = settings ? new TalkerPrefixCache(settings, modelRoot(ctx.spec.model), runner) : null;
  }

  /** Its prompt rows are the Thinker's first output, after the add (speaking slices' bound counts the wait). */
  protected override inputFollowsAdd(): boolean {
    return true;
  }

  /** The Talker waits for the Thinker's prefill after an add: an idle Talker warms its weights meanwhile. */
  protected override warmModel(): void {
    this.runner.warm();
  }

  protected admit(msg: AddRequest<TalkerArgs>): TalkerRequest {
    const args = msg.args;
    this.scheduler.add(msg.requestId, 0); // admitted lazily: nothing to compute before the first chunk
    return {
      requestId: msg.requestId,
      sampling: { ...msg.sampling, maxTokens: Math.min(msg.sampling.maxTokens, this.maxFrames()) },
      downstream: msg.downstream,
      initialCodecChunkFrames: args.initialCodecChunkFrames,
      liveAtAdmission: msg.liveRequests ?? 0,
      firstPacketTokens: args.firstPacketTokens,
      leftContextFrames: args.codecLeftContextFrames,
      cacheSalt: msg.cacheSalt,
      numOutputs: 0,
      rows: new Float32Array(0),
      numRows: 0,
      promptRows: null,
      thinkerDone: null,
      framesSampled: 0,
      toCode2Wav: null,
      playback: args.playback ?? null,
      firstSentAtMs: null,
      rowsAtMs: null,
      lastFrameSteppingMs: null,
      promptBlocks: null,
    };
  }

  /**
   * Main ended the request's first-packet hold: when that comes before the first chunk is sized (load arrived
   * right behind it, and main ended every hold), the chunk no longer has to fit the held rows.
   */
  override onKindMessage(requestId: string | undefined, body: unknown): void {
    if (!isFirstAudio(body) || requestId === undefined) return;
    const req = this.requests.get(requestId);
    if (req && req.toCode2Wav === null) req.firstPacketTokens = undefined;
  }

  protected onChunk(req: TalkerRequest, chunk: ReceivedChunk): void {
    const body = chunk.body;
    if (body !== null && body.kind !== 'talkerRows')
      return this.fail(
        req,
        new ChorusError(ErrorCodes.FRAME_INVALID, `the talker takes thinker rows, got ${body.kind}`),
      );
    if (req.promptRows === null) {
      const p = body?.promptRows;
      if (p === undefined)
        return this.fail(
          req,
          new ChorusError(ErrorCodes.CHUNK_SEQUENCE, `first chunk of ${req.requestId} lacks promptRows`),
        );
      req.promptRows = p;
      if (p + 1 >= this.maxFrames())
        return this.fail(
          req,
          new ChorusError(
            ErrorCodes.REQUEST_TOO_LARGE,
            `prompt of ${p} rows does not fit the talker's positions: shorten it`,
          ),
        );
      req.sampling = { ...req.sampling, maxTokens: Math.min(req.sampling.maxTokens, this.maxFrames() - p - 1) };
      // Never more frames than the rows a held Thinker writes before the first audio: that would wait forever.
      const hold = req.firstPacketTokens;
      const ic = Math.min(this.initialChunk(req), hold ? firstChunkCap(hold, this.runner.framesPerToken) : Infinity);
      const policy =
        req.leftContextFrames === undefined
          ? this.ctx.chunkPolicy
          : { ...this.ctx.chunkPolicy, codecLeftContextFrames: req.leftContextFrames };
      req.toCode2Wav = new Talker2Code2Wav(policy, this.runner.numCodebooks, ic, this.ctx.asyncChunk);
    }
    if (body) {
      if (body.conditionDim !== this.dim)
        return this.fail(
          req,
          new ChorusError(ErrorCodes.FRAME_INVALID, `rows of width ${body.conditionDim}, talker expects ${this.dim}`),
        );
      // Copy: the frame buffer belongs to the receive path; rows live as long as the request. Room for the whole
      // prompt and its answer's first row from the first chunk on: a prompt that comes in pieces (the Thinker's first
      // prefill in two) is not copied again at its last piece, on the first packet's path.
      const used = req.numRows * this.dim;
      const needed = used + body.rows.length;
      if (needed > req.rows.length) {
        const grown = new Float32Array(Math.max(needed, 2 * req.rows.length, (req.promptRows + 1) * this.dim));
        grown.set(req.rows.subarray(0, used));
        req.rows = grown;
      }
      req.rows.set(body.rows, used);
      req.numRows += body.numRows;
    }
    // The first frame's latency counts from its conditioning row (prompt rows may come a Thinker step earlier).
    if (req.rowsAtMs === null && req.numRows > req.promptRows) req.rowsAtMs = Date.now();
    if (chunk.meta.final) req.thinkerDone = chunk.meta.finishReason ?? 'stop';
    // Adopt the cached KV of the longest prefix before anything runs: at the first chunk when the Thinker names the
    // prompt's blocks, else once every prompt row is in (they are named by their values).
    const names = body?.promptBlocks;
    if (
      this.prefixes &&
      this.scheduler.numComputed(req.requestId) === 0 &&
      req.promptBlocks === null &&
      (this.prefixes.namesGiven(req.promptRows, names) || req.numRows >= req.promptRows)
    ) {
      req.promptBlocks = this.prefixes.namesOf(req.rows, req.promptRows, names, req.cacheSalt);
      const cached = this.prefixes.adopt(req.requestId, req.promptBlocks, req.promptRows);
      if (cached > 0) this.scheduler.startAt(req.requestId, cached);
    }
    this.refresh(req);
  }

  /**
   * The first chunk's frames: a per-request override wins; with a TTFP target, the largest chunk that can still
   * be out by it at the frame latencies measured now; else the load ladder (chunkPolicy.ts).
   */
  private initialChunk(req: TalkerRequest): number {
    const running = this.scheduler.numRunning;
    // Requests this Talker knows (added, some still waiting for their first rows) count too: the first request of
    // a burst sizes its chunk after the Thinker's prefill, when the rest of the burst has been added here. Paused
    // ones do not: they hold no slot while their clients are not reading.
    const load = Math.max(running + 1, req.liveAtAdmission, this.size - this.scheduler.numPaused);
    const pb = req.playback;
    if (req.initialCodecChunkFrames === undefined && pb?.ttfpTargetMs != null) {
      const [prefill, interval] = [this.firstFrameMs.value, this.frameIntervalMs.value];
      if (prefill !== null && interval !== null) {
        const [prefillMs, frameMs] = [prefill * load, interval * load];
        // Planned with a margin: step times under shared CPU vary, and a chunk a little smaller costs little.
        const budgetMs = TARGET_PLANNING_SHARE * (pb.firstPacketDeadlineMs - pb.downstreamMs - Date.now());
        const { frames, met } = initialChunkForTarget(this.ctx.chunkPolicy, budgetMs, prefillMs, frameMs);
        if (!met)
          this.ctx.log.debug(
            { requestId: req.requestId, budgetMs, prefillMs, targetMs: pb.ttfpTargetMs },
            'ttfp target out of reach at the current load: smallest first chunk',
          );
        return frames;
      }
    }
    return initialChunkFrames(this.ctx.chunkPolicy, this.firstChunkSharing(req, load), req.initialCodecChunkFrames);
  }

  /**
   * The requests whose steps the first chunk will share, for the ladder: with first outputs first (ArScheduler, on
   * with prefill first) only the requests still making their first chunk (this one included) and those main had live
   * that this Talker does not hold yet (a burst on its way); the ones already speaking run in steps of their own. A
   * newcomer beside sixteen long answers was sized as the 17th of a burst (25 frames: 25 of its steps before any
   * audio); it gets the first rung now. Without first outputs first, everyone holding a seat (`load`).
   */
  private firstChunkSharing(req: TalkerRequest, load: number): number {
    if (this.ctx.spec.engine.prefillFirst === false || !this.ctx.asyncChunk) return load;
    let pending = 0;
    for (const r of this.requests.values())
      if (r.firstSentAtMs === null && this.scheduler.status(r.requestId) !== 'paused') pending++;
    return Math.max(1, pending + Math.max(0, req.liveAtAdmission - this.size));
  }

  /**
   * When the request's next chunk must leave for its listener not to run dry (epoch ms): the first by its
   * deadline, later ones when the audio already sent has played, each less the time Code2Wav takes.
   */
  private deadlineMs(req: TalkerRequest): number | null {
    const pb = req.playback;
    if (!pb || !req.toCode2Wav) return null;
    const due =
      req.firstSentAtMs === null
        ? pb.firstPacketDeadlineMs
        : req.firstSentAtMs + req.toCode2Wav.framesSent * pb.frameMs;
    return due - pb.downstreamMs;
  }

  /**
   * A first chunk sized for a TTFP target that the frames still to make would now miss (the load rose since it was
   * sized): it goes as it is. Only the first: it carries no left context, so sending it short costs nothing later
   * chunks do not already pay (each is at most as long as the audio before it).
   */
  private firstChunkLate(req: TalkerRequest, nowMs: number): boolean {
    const pb = req.playback;
    const interval = this.frameIntervalMs.value;
    if (req.firstSentAtMs !== null || pb?.ttfpTargetMs == null || interval === null) return false;
    const frameMs = interval * Math.max(1, this.scheduler.numRunning);
    return nowMs + req.toCode2Wav!.framesUntilNextChunk * frameMs > pb.firstPacketDeadlineMs - pb.downstreamMs;
  }

  /**
   * First audio first: the audio its listener has past when its next chunk must leave, once the frames still to make
   * for it are made at the pace of the moment (src/sched/FarAhead.ts).
   */
  protected override leadMs(requestId: string, nowMs: number): number | null {
    const req = this.requests.get(requestId);
    const deadlineMs = req ? this.deadlineMs(req) : null;
    const interval = this.frameIntervalMs.value;
    if (!req?.toCode2Wav || deadlineMs === null || interval === null) return null;
    const framesMs = req.toCode2Wav.framesUntilNextChunk * interval * Math.max(1, this.scheduler.numRunning);
    return deadlineMs - nowMs - framesMs;
  }

  protected override updateDeadlines(): void {
    if (this.ctx.scheduling !== 'playback') return;
    for (const req of this.requests.values()) {
      const deadlineMs = this.deadlineMs(req);
      if (deadlineMs === null || !this.scheduler.has(req.requestId)) continue;
      this.scheduler.setDeadline(req.requestId, deadlineMs);
    }
  }

  /** Frames that fit the model's positions (prompt rows take positions too; checked again per request). */
  private maxFrames(): number {
    const m = this.ctx.spec.model;
    return m.source === 'generated' && m.kind === 'talker' ? m.size.maxPositions : Number.MAX_SAFE_INTEGER;
  }

  /** Text tokens known so far (rows after the prompt). */
  private textRows(req: TalkerRequest): number {
    return req.promptRows === null ? 0 : req.numRows - req.promptRows;
  }

  /** Updates how many positions are computable, and finishes the request when no frame is left to make. */
  private refresh(req: TalkerRequest): void {
    const p = req.promptRows;
    if (p === null) return;
    const target = this.targetFrames(req);
    if (req.thinkerDone && req.framesSampled >= Math.min(target, req.sampling.maxTokens))
      return this.finishTalker(req, this.endReason(req));
    // Without the row of the next frame, the known positions are still computed ahead, as context only: the
    // prompt rows prefill while the Thinker writes its first token.
    const canMakeNext = req.framesSampled < target;
    this.scheduler.setAvailable(req.requestId, this.knownPositions(req, p, canMakeNext), canMakeNext);
    // Until its first chunk is out, no prompt joins its steps (ArScheduler.setFirstOutputPending): first audio first.
    // Without async_chunk all of its audio goes at the end: there is no first chunk to hurry.
    this.scheduler.setFirstOutputPending(req.requestId, this.ctx.asyncChunk && req.firstSentAtMs === null);
  }

  /**
   * Positions computable now. The prompt's rows may come in pieces (the Thinker sends each piece of a chunked
   * prefill as it is computed, so this prefill runs beside the Thinker's next piece): the rows that are in, once the
   * prefix cache, if any, had its look (its names need the whole prompt when the Thinker gives none).
   */
  private knownPositions(req: TalkerRequest, p: number, canMakeNext: boolean): number {
    const computed = this.scheduler.numComputed(req.requestId);
    if (req.numRows < p) return this.prefixes && req.promptBlocks === null ? computed : Math.max(computed, req.numRows);
    return p + req.framesSampled + (canMakeNext ? 1 : 0);
  }

  /** Frames the rows known now ask for. */
  private targetFrames(req: TalkerRequest): number {
    return Math.max(0, this.textRows(req)) * this.runner.framesPerToken;
  }

  /** Why a request that makes no more frames ends: 'stop' when all of the finished text was voiced. */
  private endReason(req: TalkerRequest): FinishReason {
    return req.thinkerDone && this.targetFrames(req) <= req.sampling.maxTokens ? 'stop' : 'length';
  }

  protected batchItem(req: TalkerRequest, item: ScheduledItem): TalkerBatchItem {
    return {
      seqId: req.requestId,
      rows: this.rowsFor(req, item),
      numRows: item.numTokens,
      sampling: req.sampling,
      sample: item.sample,
    };
  }

  protected afterStep(req: TalkerRequest, item: ScheduledItem, out: TalkerStepOutput): void {
    if (!item.sample) return; // a prefill chunk: nothing sampled yet
    if (out.eos && !req.sampling.ignoreEos) return this.finishTalker(req, 'stop');
    const nowMs = Date.now();
    const sharing = Math.max(1, this.scheduler.numRunning);
    const steppingMs = this.steppingClockMs;
    if (req.lastFrameSteppingMs !== null)
      this.frameIntervalMs.observe((steppingMs - req.lastFrameSteppingMs) / sharing);
    else if (req.rowsAtMs !== null) this.firstFrameMs.observe((nowMs - req.rowsAtMs) / sharing);
    req.lastFrameSteppingMs = steppingMs;
    req.framesSampled++;
    req.numOutputs++;
    req.toCode2Wav!.push(out.codes);
    const chunk = req.toCode2Wav!.take(false, this.firstChunkLate(req, nowMs));
    if (chunk) {
      // Its first chunk: first audio first counts it speaking from here (Code2Wav's one short step from its audio).
      if (req.firstSentAtMs === null) this.heardFirstAudio(req.requestId, nowMs);
      req.firstSentAtMs ??= Date.now();
      this.send(req, req.downstream, codesChunk(chunk));
    }
    if (req.framesSampled >= req.sampling.maxTokens) return this.finishTalker(req, this.endReason(req));
    this.refresh(req);
  }

  protected override freeState(req: TalkerRequest): void {
    // Before its KV is freed: the prompt's whole blocks go into the cache (positions past the prompt were fed
    // sampled frames, which the next turn's prompt rows will not be).
    const computed = Math.min(this.scheduler.numComputed(req.requestId), req.promptRows ?? 0);
    this.prefixes?.retain(req.requestId, req.promptBlocks ?? [], computed);
    super.freeState(req);
  }

  override stats(): StageStats {
    const kind: TalkerStats = this.prefixes ? { prefix: this.prefixes.stats } : {};
    return { ...super.stats(), kind };
  }

  override async close(): Promise<void> {
    this.prefixes?.clear();
  }

  private finishTalker(req: TalkerRequest, reason: FinishReason): void {
    const last = req.toCode2Wav?.take(true) ?? null;
    this.finish(req, reason, () => (last ? codesChunk(last) : undefined));
  }

  /** Conditioning rows for the positions of this step (see the position layout above). */
  private rowsFor(req: TalkerRequest, item: ScheduledItem): Float32Array {
    const all = req.rows;
    const p = req.promptRows!;
    const out = new Float32Array(item.numTokens * this.dim);
    for (let i = 0; i < item.numTokens; i++) {
      const pos = item.startPosition + i;
      const row = pos <= p ? pos : p + Math.floor((pos - p) / this.runner.framesPerToken);
      out.set(all.subarray(row * this.dim, (row + 1) * this.dim), i * this.dim);
    }
    return out;
  }
}

function codesChunk(c: { codes: Int32Array; numFrames: number; contextFrames: number }): CodecFramesBody {
  return {
    kind: 'codecFrames',
    codes: c.codes,
    numCodebooks: c.codes.length / Math.max(1, c.numFrames),
    numFrames: c.numFrames,
    contextFrames: c.contextFrames,
  };
}
