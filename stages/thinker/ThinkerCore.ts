/**
 * The Thinker stage: continuous batching over a ThinkerRunner. Emits text token ids to main every step (text
 * streams to clients whatever async_chunk says) and, to the stage it feeds, conditioning rows (a Talker, through
 * Thinker2Talker) or its text (a stage whose kind reads it: the TextFeed that kind's descriptor makes, readsText).
 *
 * Media: a request with media comes with its prompt already expanded (one placeholder id per embedding) and a
 * position map; each item's rows arrive as a chunk from its encoder stage (a clip's in pieces, group by group, as
 * they are encoded). Until then the request may prefill up to the first row missing and waits there
 * (ThinkerMedia.readyLimit); steps that cover spans get inputs_embeds with the rows spliced in. An item an encoder
 * cannot deliver fails the request, or with on_encoder_failure text_only is cut out of the prompt and named in the
 * final chunk's `warnings` (unless pieces of it were prefilled: then it fails the request).
 */
import type { ScheduledItem } from '../../src/sched/ArScheduler.ts';
import { modelRoot } from '../../src/sched/blockNames.ts';
import type { ThinkerBatchItem, ThinkerRunner, ThinkerStepOutput } from '../types.ts';
import { Thinker2Talker } from '../talker/thinker2talker.ts';
import { stopReason } from '../sampling/stopping.ts';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { FinishReason } from '../../src/common/engine.ts';
import { MAIN } from '../../src/common/graph.ts';
import { ChorusError, ErrorCodes, REENCODE_CODES, type SerializedError } from '../../src/common/errors.ts';
import { EC_STORE, type AddRequest, type StageStats } from '../../src/worker/messages.ts';
import type { ThinkerArgs, ThinkerStats } from './protocol.ts';
import { requestEventOf } from '../requestEvents.ts';
import type { TalkerRowsBody } from '../../src/common/payloads.ts';
import type { CoreRequest, StageContext } from '../../src/worker/StageCore.ts';
import { ArStageCore } from '../../src/worker/ArStageCore.ts';
import { ThinkerMedia } from './ThinkerMedia.ts';
import type { ThinkerEc } from './ThinkerEc.ts';
import { ThinkerPrefixCache, uncachedPrefix, type PrefixUse } from './ThinkerPrefixCache.ts';
import { refuseThinkerAdd } from './thinkerAdmission.ts';
import { ThinkerGrammar, type GrammarUse } from './ThinkerGrammar.ts';
import type { TextFeed } from '../StageKindDescriptor.ts';
import { TEXT_DELTA_MAX_MS, TextDeltas, textBody } from './TextDeltas.ts';

export interface ThinkerRequest extends CoreRequest {
  /** The prompt (placeholders expanded); shrinks only when a media item is dropped. */
  readonly promptTokenIds: number[];
  readonly generated: number[];
  readonly toTalker: Thinker2Talker | null;
  /** The Thinker's text for a stage that reads it (the consumer kind's TextFeed); null when it feeds rows or none. */
  readonly toText: TextFeed | null;
  readonly media: ThinkerMedia | null;
  readonly prefix: PrefixUse;
  /** First-packet hold: tokens written before waiting for main's first_audio; null once released (or none). */
  holdAfterTokens: number | null;
  /** Constrained decoding (ThinkerGrammar.ts); null without a grammar. */
  readonly grammar: GrammarUse | null;
  /** Top alternatives reported with each token's logprob (ThinkerArgs.logprobs); null: no logprobs. */
  readonly logprobs: number | null;
  /** The audio each token voices (ThinkerArgs.speechMsPerToken, ms); null: unknown (not paced to its speech). */
  readonly speechMsPerToken: number | null;
}

export class ThinkerCore extends ArStageCore<ThinkerRequest, ThinkerArgs, ThinkerBatchItem, ThinkerStepOutput> {
  private readonly prefixes: ThinkerPrefixCache | null;
  private readonly grammars: ThinkerGrammar;
  /** Text to main, a few tokens a message (TextDeltas.ts). */
  private readonly texts = new TextDeltas((requestId, delta) => {
    const req = this.requests.get(requestId);
    const toMain = req?.downstream.filter((t) => t.stageId === MAIN);
    if (req && toMain) this.send(req, toMain, textBody(delta));
  });

  constructor(
    ctx: StageContext,
    private readonly runner: ThinkerRunner,
    /** The encoder-output store (ec_store:), null without one. */
    private readonly ec: ThinkerEc | null = null,
    /** The feed of a consumer that reads the Thinker's text (readsText); null: it feeds rows (a Talker), if any. */
    private readonly textFeed: ((asyncChunk: boolean) => TextFeed) | null = null,
  ) {
    // Long prefills yield to short prompts (ArScheduler.ts): a clip's rows never make a text's first token wait a
    // whole step of them.
    super(ctx, runner, 'fifo', true);
    this.grammars = new ThinkerGrammar(ctx.spec.model, runner.vocabSize);
    const settings = ctx.spec.engine.prefixCache;
    // The cache sits beside the scheduler's KV budget (its own max_bytes), so it never makes a request wait.
    this.prefixes = settings
      ? new ThinkerPrefixCache(
          { ...settings, modelKey: modelRoot(ctx.spec.model) },
          {
            runner,
            startAt: (requestId, n) => this.scheduler.startAt(requestId, n),
            numComputed: (requestId) => this.scheduler.numComputed(requestId),
            requests: () => this.requests.values(),
            refreshAvailable: (req) => this.refreshAvailable(req as ThinkerRequest),
            log: ctx.log,
          },
        )
      : null;
  }

  protected admit(msg: AddRequest<ThinkerArgs>): ThinkerRequest {
    const args = msg.args;
    const prompt = args.promptTokenIds ?? [];
    const feeds = msg.downstream.some((t) => t.stageId !== MAIN);
    const needsTalker = feeds && this.textFeed === null;
    const maxPositions = this.maxPositions();
    refuseThinkerAdd(
      {
        requestId: msg.requestId,
        stageId: this.ctx.spec.stageId,
        promptLength: prompt.length,
        needsTalker,
        hasMedia: Boolean(args.media),
        maxPositions,
      },
      this.runner.supports,
    );
    const promptTokenIds = [...prompt];
    const media = args.media ? new ThinkerMedia(args.media, promptTokenIds, this.runner.hiddenSize) : null;
    this.ec?.drop(args.ecDrop ?? []);
    // Held at position 0 until the prefix it may reuse is settled; then (and without one) as refreshAvailable says.
    this.scheduler.add(msg.requestId, 0);
    // The answer may not run past the model's positions: cap max_tokens instead of failing mid-answer.
    const sampling = { ...msg.sampling, maxTokens: Math.min(msg.sampling.maxTokens, maxPositions - prompt.length) };
    const req: ThinkerRequest = {
      requestId: msg.requestId,
      sampling,
      downstream: msg.downstream,
      numOutputs: 0,
      promptTokenIds,
      generated: [],
      toTalker: needsTalker ? new Thinker2Talker(this.runner.hiddenSize, prompt.length, this.ctx.asyncChunk) : null,
      toText: feeds && this.textFeed ? this.textFeed(this.ctx.asyncChunk) : null,
      media,
      holdAfterTokens:
        needsTalker && this.ctx.asyncChunk && args.firstPacketTokens ? Math.max(1, args.firstPacketTokens) : null,
      grammar: args.grammar ? this.openGrammar(msg.requestId, args.grammar) : null,
      logprobs: args.logprobs ?? null,
      speechMsPerToken: needsTalker && positiveFinite(args.speechMsPerToken) ? args.speechMsPerToken : null,
      prefix:
        this.prefixes?.claim(
          msg.requestId,
          args.prefix?.key ?? null,
          args.prefix?.prefillOnly === true,
          msg.cacheSalt,
        ) ?? uncachedPrefix(args.prefix?.prefillOnly === true),
    };
    if (media && this.ec) {
      // Main looked each item up in the store before it sent the request (a miss went to an encoder); the hits'
      // rows are taken here. Each lookup is a span of the request's trace, from here to its rows.
      const lookedUpAtMs = performance.now();
      media.items.forEach((it, item) => {
        if (it.ec && it.ec.contentKey === undefined)
          this.ctx.spans?.ecLookup(msg.requestId, item, 'miss', lookedUpAtMs, 0);
      });
      this.ec.takeHits(msg.requestId, media, (item, rows, source) => {
        const bytes = rows instanceof Float32Array ? rows.byteLength : 0;
        this.ctx.spans?.ecLookup(req.requestId, item, source, lookedUpAtMs, bytes);
        this.onStoreRows(req, item, rows);
      });
    }
    media?.recoverFrom(() => req.prefix.rows);
    // At light load (a first-packet hold) the prompt goes in two steps: the Talker prefills the first one's rows while
    // this stage computes the rest (chunk_policy.first_prefill_split).
    const split = this.ctx.chunkPolicy.firstPrefillSplit;
    if (req.holdAfterTokens !== null && split !== null) this.scheduler.splitFirstStep(msg.requestId, split);
    this.refreshAvailable(req);
    return req;
  }

  /** The request samples once its grammar is compiled; a grammar that cannot be compiled fails it. */
  private openGrammar(requestId: string, spec: NonNullable<ThinkerArgs['grammar']>): GrammarUse {
    const live = () => this.requests.get(requestId);
    return this.grammars.open(
      spec,
      () => {
        const req = live();
        if (!req) return;
        this.refreshAvailable(req);
        this.ctx.wake?.();
      },
      (err) => {
        const req = live();
        if (req) this.fail(req, err);
      },
    );
  }

  /** An item's rows from the EC store (or why they cannot come): as if its encoder had sent them. */
  private onStoreRows(req: ThinkerRequest, item: number, rows: Float32Array | SerializedError): void {
    if (this.requests.get(req.requestId) !== req) return; // ended meanwhile
    if (!(rows instanceof Float32Array)) return this.mediaItemFailed(req, item, rows);
    const width = this.runner.hiddenSize;
    const problem = req.media!.setRows(item, EC_STORE, { rows, numRows: rows.length / width, width });
    if (problem) return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, problem));
    this.refreshAvailable(req);
    this.ctx.wake?.();
  }

  /** Main's request events (../requestEvents.ts): the Thinker hears all three; a body that is none is ignored. */
  override onKindMessage(requestId: string | undefined, body: unknown): void {
    const m = requestEventOf(body);
    if (m?.type === 'release_prefix') this.prefixes?.release(m.key);
    else if (m?.type === 'first_audio' && requestId !== undefined) this.onFirstAudio(requestId);
    else if (m?.type === 'media_failed' && requestId !== undefined)
      this.onMediaFailed(requestId, m.fromInstance, m.error, m.item);
    else this.ctx.log.debug({ requestId }, 'kind message ignored: not a request event');
  }

  /** Main has the request's first audio: it speaks (first audio first); its hold ends and decoding goes on. */
  private onFirstAudio(requestId: string): void {
    this.heardFirstAudio(requestId);
    const req = this.requests.get(requestId);
    if (!req || req.holdAfterTokens === null) return;
    req.holdAfterTokens = null;
    this.refreshAvailable(req);
  }

  /** Speech lead: a spoken answer's text is its speech to come (src/sched/SpeechLead.ts). */
  protected override pacesSpeech(): boolean {
    return true;
  }

  /** The entry stage computes at its add: it keeps its weights warm while idle instead (IdleWarmth.ts). */
  protected override keepsWarm(): boolean {
    return true;
  }

  protected override warmModel(): void {
    this.runner.warm();
  }

  protected override speechMadeMs(requestId: string): number | null {
    const req = this.requests.get(requestId);
    return req?.speechMsPerToken ? req.generated.length * req.speechMsPerToken : null;
  }

  protected override freeState(req: ThinkerRequest): void {
    this.texts.drop(req.requestId);
    if (req.grammar) this.grammars.close(req.grammar);
    this.prefixes?.onEnd(req); // before its KV is freed: the computed blocks go into the cache
    super.freeState(req);
  }

  override stats(): StageStats {
    const kind: ThinkerStats = {
      ...(this.prefixes ? { prefix: this.prefixes.stats } : {}),
      ...(this.ec ? { ec: this.ec.stats } : {}),
      ...(this.grammars.stats ? { grammar: this.grammars.stats } : {}),
    };
    return { ...super.stats(), kind };
  }

  override async close(): Promise<void> {
    this.prefixes?.clear();
    this.grammars.dispose();
    await this.ec?.close();
  }

  private maxPositions(): number {
    const m = this.ctx.spec.model;
    return m.source === 'generated' && m.kind === 'thinker' ? m.size.maxPositions : Number.MAX_SAFE_INTEGER;
  }

  /**
   * engine.sync_encoding (the bench's baseline, docs/video.md): no step runs while any request's media rows are still
   * coming, as an engine that encodes on its own path stalls the whole batch for an encode.
   */
  override step(): boolean {
    const sync = this.ctx.spec.engine.syncEncoding === true;
    const worked =
      !(sync && [...this.requests.values()].some((r) => r.media !== null && !r.media.complete)) && super.step();
    // Text that waited its longest goes; all of it when nothing runs (the loop sleeps next).
    this.texts.sendOlderThan(worked ? performance.now() - TEXT_DELTA_MAX_MS : Infinity);
    return worked;
  }

  /** Text already written goes before the error. */
  protected override failWith(req: ThinkerRequest, reason: FinishReason, error: SerializedError): void {
    this.texts.sendOne(req.requestId);
    super.failWith(req, reason, error);
  }

  /** The prompt comes with `add`; chunks are media rows from the encoders (one item each, or its error). */
  protected onChunk(req: ThinkerRequest, chunk: ReceivedChunk): void {
    const body = chunk.body;
    if (!req.media || body?.kind !== 'encoderRows') {
      const what = `unexpected chunk from ${chunk.meta.from} for ${req.requestId}: the thinker takes only media rows`;
      return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, what));
    }
    if (body.error) return this.mediaItemFailed(req, body.item, body.error);
    const problem = req.media.setRows(body.item, chunk.meta.from, body);
    if (problem) return this.fail(req, new ChorusError(ErrorCodes.FRAME_INVALID, problem));
    const ec = req.media.items[body.item].ec;
    const whole = req.media.rowsOf(body.item); // null until its last piece is in
    if (this.ec && ec && whole && body.contentKey !== undefined)
      this.ec.keep(req.requestId, ec, body.contentKey, whole);
    this.refreshAvailable(req);
  }

  /** An encoder's stream broke (deadline, bad frame) or it failed the request: that costs its items only. */
  protected override onUpstreamFailure(
    req: ThinkerRequest,
    reason: FinishReason,
    error: SerializedError,
    fromStageId: string | undefined,
  ): void {
    const items = fromStageId !== undefined && reason === 'error' ? (req.media?.waitingFrom(fromStageId) ?? []) : [];
    if (items.length === 0) return super.onUpstreamFailure(req, reason, error, fromStageId);
    for (const item of items) if (this.requests.has(req.requestId)) this.mediaItemFailed(req, item, error);
  }

  /**
   * Main: an encoder instance died (or refused the request) and its items will not come; with `item`, main will not
   * encode that item again (the answer to its media_retry): the failure policy applies to it.
   */
  private onMediaFailed(requestId: string, fromInstance: string, error: SerializedError, item?: number): void {
    const req = this.requests.get(requestId);
    if (!req?.media) return;
    if (item !== undefined) return this.mediaItemFailed(req, item, error, true);
    this.ctx.adapter.stopReceiving(requestId, fromInstance);
    for (const item of req.media.waitingFrom(fromInstance))
      if (this.requests.has(requestId)) this.mediaItemFailed(req, item, error);
  }

  /**
   * An item will not come. A failure main can mend (an encode over memory or time, a lost store entry: REENCODE_CODES)
   * is asked of main first, once, and the item waits: main encodes it again in a new run of the request (this run is
   * aborted) or answers `final` (media_failed with the item), and the failure policy applies.
   */
  private mediaItemFailed(req: ThinkerRequest, item: number, error: SerializedError, final = false): void {
    const media = req.media!;
    if (!media.isWaiting(item)) return; // rows already in (or dropped): a late failure changes nothing
    if (!final && REENCODE_CODES.has(error.code)) {
      if (media.askRetry(item)) this.ctx.post({ type: 'media_retry', requestId: req.requestId, item, error });
      return;
    }
    const it = media.items[item];
    const message = error.message.startsWith(it.what) ? error.message : `${it.what}: ${error.message}`;
    // Pieces of it were prefilled already: the positions after it cannot move, so it cannot be left out.
    const prefilled = media.partlyPrefilled(item, this.scheduler.numComputed(req.requestId));
    if (it.onFailure === 'fail' || prefilled) return this.failWith(req, 'error', { code: error.code, message });
    const promptLength = media.drop(item, `${error.code}: ${error.message}`);
    req.toTalker?.shrinkPrompt(promptLength);
    this.ctx.log.warn(
      { requestId: req.requestId, item: it.what, code: error.code },
      'media item dropped (on_encoder_failure: text_only)',
    );
    this.refreshAvailable(req);
  }

  /**
   * numAvailableTokens: the prompt up to the first item still encoding, all of it (+ answer) once none is; nothing
   * while a prefix to reuse is unsettled. A prefill-only request samples nothing at the end of its prompt.
   */
  private refreshAvailable(req: ThinkerRequest): void {
    if (this.prefixes?.held(req)) return;
    const media = req.media;
    if (media) this.askHeldEncodes(req, media);
    // A held request keeps its last token unfed: nothing to compute until its first audio is out.
    const held = req.holdAfterTokens !== null && req.generated.length >= req.holdAfterTokens;
    const whole = req.promptTokenIds.length + req.generated.length - (held ? 1 : 0);
    // An item still encoding blocks at its span; one whose span was adopted from the prefix cache (a video named by
    // its key) blocks nothing: its rows may come later, or never be read.
    const blocked = !media || media.complete ? null : media.readyLimit(this.scheduler.numComputed(req.requestId));
    let limit = blocked === null || blocked >= req.promptTokenIds.length ? whole : blocked;
    // Its grammar still compiling: the prompt but its last position, which must wait to sample under the mask.
    const compiling = req.grammar !== null && req.grammar.matcher === null;
    if (compiling)
      limit = Math.max(this.scheduler.numComputed(req.requestId), Math.min(limit, req.promptTokenIds.length - 1));
    this.scheduler.setAvailable(req.requestId, limit, !req.prefix.prefillOnly && !compiling);
  }

  /**
   * Its prefix settled (or no cache): an item main did not encode for KV this instance was to hold, whose positions
   * the cache did not give, is asked of main (the request runs again with it encoded: CHORUS_ERR_KV_NOT_HELD).
   */
  private askHeldEncodes(req: ThinkerRequest, media: ThinkerMedia): void {
    const computed = this.scheduler.numComputed(req.requestId);
    media.releaseHeld(computed);
    for (const item of media.heldNotAdopted(computed)) {
      const message =
        `${media.items[item].what}: not encoded, as this Thinker's prefix cache held its positions when the request ` +
        'was routed, but it no longer does (evicted since); retry the request (it will be encoded)';
      this.mediaItemFailed(req, item, { code: ErrorCodes.KV_NOT_HELD, message });
    }
  }

  protected override warningsOf(req: ThinkerRequest): readonly string[] {
    return req.media?.warnings ?? [];
  }

  protected batchItem(req: ThinkerRequest, item: ScheduledItem): ThinkerBatchItem {
    const all = req.promptTokenIds.length;
    const start = item.startPosition;
    const end = start + item.numTokens;
    const tokenIds: number[] = [];
    for (let p = start; p < end; p++) tokenIds.push(p < all ? req.promptTokenIds[p] : req.generated[p - all]);
    // A step that stops at a media boundary reaches the end of what is available, not of the prompt: no sample.
    const sample = item.sample && end >= all;
    const allowedTokens = sample && req.grammar ? this.grammars.mask(req.grammar) : undefined;
    const base = {
      seqId: req.requestId,
      numTokens: item.numTokens,
      sample,
      sampling: req.sampling,
      generated: req.generated,
      ...(allowedTokens ? { allowedTokens } : {}),
      ...(sample && req.logprobs !== null ? { logprobs: req.logprobs } : {}),
    };
    if (req.media?.overlaps(start, Math.min(end, all))) {
      return { ...base, tokenIds, inputsEmbeds: req.media.embeds(start, end, this.runner.embed(tokenIds)) };
    }
    return { ...base, tokenIds };
  }

  protected afterStep(req: ThinkerRequest, item: ScheduledItem, out: ThinkerStepOutput): void {
    // The prefix cache's copy of the step's rows is taken after the Talker's rows are sent (a first packet's path).
    const keepRows = () => this.prefixes?.onStep(req, item, out);
    this.releasePrefilled(req);
    if (req.prefix.prefillOnly) {
      keepRows();
      return this.afterPrefillStep(req);
    }
    const token = item.sample && item.startPosition + item.numTokens >= req.promptTokenIds.length ? out.tokenId : null;
    const grammarStep = token !== null && req.grammar ? this.grammars.accept(req.grammar, token) : 'continue';
    if (grammarStep === 'refused') {
      keepRows();
      const why = `token ${token} was sampled outside the request's grammar (a sampler that ignored its mask)`;
      return this.fail(req, new ChorusError(ErrorCodes.INTERNAL, why));
    }
    // A stop token ends the text without being sent (so does one the grammar accepted as its end: the answer is
    // complete); max_tokens ends it after the token that reaches it.
    const grammarEnd = grammarStep === 'end';
    const stop = grammarEnd
      ? 'stop'
      : token !== null
        ? stopReason(token, req.generated.length + 1, req.sampling, this.runner.eosTokenId)
        : null;
    const emitsToken = token !== null && stop !== 'stop';
    if (emitsToken) {
      req.toText?.push(token);
      req.generated.push(token);
      req.numOutputs++;
      this.refreshAvailable(req);
    }
    req.toTalker?.onStep(
      item.startPosition,
      item.numTokens,
      out.embeds,
      out.hidden,
      emitsToken ? this.runner.embed([token]) : null,
    );
    const talker = req.downstream.filter((t) => t.stageId !== MAIN);
    if (stop) {
      keepRows();
      const text = textBody(this.texts.final(req.requestId, emitsToken ? token : null, out.logprobs));
      const warnings = req.media?.warnings.length
        ? { warnings: req.media.warnings, droppedItems: req.media.dropped }
        : {};
      const cached = req.prefix.cachedTokens ? { cachedTokens: req.prefix.cachedTokens } : {};
      this.finish(req, stop, (t) => {
        if (t.stageId === MAIN) return { ...text, ...warnings, ...cached };
        return req.toText ? req.toText.take(true)! : this.talkerChunk(req, true);
      });
      return;
    }
    // The Talker's rows before main's text: each put wakes its consumer, and main (at stage_nice levels above the
    // stages) woken first took this process's core whenever the other core was busy, so the rows, the first packet's
    // path, waited 2-3 ms for main's handling of the text (bench/NOTES.md, "The rows before the text").
    const body = req.toText ? (req.toText.take(false) ?? undefined) : this.talkerChunk(req, false);
    if (body) this.send(req, talker, body);
    if (item.splitFirst) this.continueAtOnce(); // its second piece, at once: on the first packet's path
    keepRows();
    // The answer's first token goes at once (its TTFT), and what waits when the request stops for its first audio.
    const held = req.holdAfterTokens !== null && req.generated.length >= req.holdAfterTokens;
    const first = req.generated.length === 1;
    if (emitsToken) this.texts.push(req.requestId, token, out.logprobs, first || held, performance.now());
  }

  /**
   * Media rows whose positions are prefilled are let go (the request's PositionRows hold those positions' inputs,
   * read back on a recompute): main's budget of rows held goes down by them (media_released).
   */
  private releasePrefilled(req: ThinkerRequest): void {
    const bytes = req.media?.releasePrefilled(this.scheduler.numComputed(req.requestId)) ?? 0;
    if (bytes > 0) this.ctx.post({ type: 'media_released', requestId: req.requestId, bytes });
  }

  /** A prefill-only step: at the end of the prompt it finishes (its KV goes into the cache as it is freed). */
  private afterPrefillStep(req: ThinkerRequest): void {
    if (this.scheduler.numComputed(req.requestId) < req.promptTokenIds.length) return;
    const p = req.prefix;
    const cached = p.cachedTokens ? { cachedTokens: p.cachedTokens } : {};
    this.finish(req, 'stop', (t) => (t.stageId === MAIN ? { kind: 'text', tokenIds: [], ...cached } : undefined));
  }

  /** The Talker's chunk of the rows ready now; the first names the prompt's blocks when this Thinker keeps a cache. */
  private talkerChunk(req: ThinkerRequest, final: boolean): TalkerRowsBody | undefined {
    const prefixes = this.prefixes;
    return req.toTalker?.takeChunk(final, prefixes ? () => prefixes.promptBlocks(req) : undefined);
  }
}

function positiveFinite(x: number | undefined): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x > 0;
}
