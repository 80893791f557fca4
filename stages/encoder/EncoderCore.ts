/**
 * An encoder stage (kind encoder): media items in from main, their rows out to the Thinker, one chunk per item.
 *
 *   chunk from main (an item's bytes) -> decode + content hash -> EncoderCache.acquire:
 *     hit     -> the rows go to the Thinker at once (no decode of features, no encoder run)
 *     pending -> the same media is queued for another request (or twice in this one): wait for that job
 *     miss    -> queue an encode job
 *   step: planEncoderStep picks the batches that start now (encoder budget in embeddings, same-modality batches
 *   flushed when full or when the oldest job has waited batch_timeout_ms; the loop sleeps until that moment via
 *   nextWakeAtMs), runs each as one encoder call, completes the cache entries and sends the rows.
 *   A clip whose groups encode apart (the generated vision encoder) is run in pieces instead, `stream_groups`
 *   temporal groups a step, before anything else: each piece's rows go to the Thinker as soon as they exist (a
 *   non-final chunk with their offset), so its prefill of the clip runs while the rest encodes; the last piece
 *   completes the cache entry and carries the content key.
 *
 * An item that cannot be used (it does not decode, or the encoder run fails) is reported to the Thinker in-band
 * as that item's error ({item, error}); the Thinker applies on_encoder_failure. The request's entries stay pinned
 * in the cache until all its items are sent; abort and failure release them and drop jobs nobody waits for.
 */
import { modalities, modalityOfBody } from '../../src/media/modalities/index.ts';
import type { EncoderSettings } from '../../src/common/encoderSettings.ts';
import { ChorusError, ErrorCodes, serializeError } from '../../src/common/errors.ts';
import { EncoderCache } from './EncoderCache.ts';
import { planEncoderStep, type EncodeJob, type EncoderBudgetPolicy } from './encoderBudget.ts';
import type { EncoderRunner } from './EncoderRunner.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import type { ReceivedChunk } from '../../transport/adapter/ChunkTransferAdapter.ts';
import type { AddRequest, EncodeItem, StageStats } from '../../src/worker/messages.ts';
import type { EncoderRowsBody } from '../../src/common/payloads.ts';
import { StageCore, type CoreRequest, type StageContext } from '../../src/worker/StageCore.ts';
import { ContentKeys, prepareItem, type PreparedItem } from './encoderInputs.ts';
import { clipGroups } from './encoderBatch.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import type { VideoPatches } from '../../src/media/types.ts';
import { bytesKeyOf, saltedBytesKey } from '../../src/media/mediaKey.ts';
import type { EncoderArgs, EncoderKindStats } from './protocol.ts';
import { allocationFailure, encodeCapOf, overMemoryCap, type EncodeCap } from './encodeCap.ts';

interface EncoderRequest extends CoreRequest {
  readonly items: ReadonlyMap<number, EncodeItem>;
  readonly delivered: Set<number>;
  /** AddRequest.cacheSalt: its items' content keys (this cache's, the EC store's) are made within it. */
  readonly cacheSalt: string | undefined;
}

interface Job extends EncodeJob {
  /** The cache key. */
  readonly id: string;
  readonly input: () => EncoderInput;
  readonly waiters: { readonly requestId: string; readonly item: number }[];
}

/** A clip being encoded a piece a step: the groups done, and their rows (sent to the waiters as each piece ends). */
interface ClipInPieces {
  readonly job: Job;
  readonly clip: VideoPatches;
  nextGroup: number;
  readonly done: Float32Array[];
  rowsDone: number;
}

/** Runner-like surface the core needs (a fake in unit tests). */
export type EncoderCoreRunner = Pick<
  EncoderRunner,
  'modality' | 'outputSize' | 'identity' | 'encode' | 'windowStats' | 'clipGroupsApart'
>;

export class EncoderCore extends StageCore<EncoderRequest, EncoderArgs> {
  private readonly settings: EncoderSettings;
  private readonly policy: EncoderBudgetPolicy;
  readonly cache: EncoderCache;
  private readonly jobs = new Map<string, Job>();
  /** Clips encoded a piece a step, by job id, oldest first (run before any new batch). */
  private readonly inPieces = new Map<string, ClipInPieces>();
  /** Temporal groups per piece of a clip (null: clips are encoded whole). */
  private readonly groupsPerPiece: number | null;
  private nextFlushAtMs: number | null = null;
  private runs = 0;
  private itemsEncoded = 0;
  private decodesSkipped = 0;
  private mediaItemsReceived = 0;
  private mediaBytesReceived = 0;
  private readonly contentKeys = new ContentKeys();
  /** A vision run's patches and memory at most (null: audio). */
  private readonly cap: EncodeCap | null;
  private runsSplit = 0;

  constructor(
    ctx: StageContext,
    private readonly runner: EncoderCoreRunner,
  ) {
    super(ctx);
    const settings = ctx.spec.encoder;
    if (!settings)
      throw new ChorusError(ErrorCodes.STAGE_BOOT, `stage ${ctx.spec.stageId} is an encoder without encoder settings`);
    if (modalities[settings.modality].encoder !== modalities[runner.modality].encoder) {
      throw new ChorusError(
        ErrorCodes.STAGE_BOOT,
        `stage ${ctx.spec.stageId} encodes ${settings.modality} but its model is a ${runner.modality} encoder`,
      );
    }
    this.settings = settings;
    this.cap = encodeCapOf(ctx.spec);
    this.policy = {
      budgetEmbeddings: settings.budgetEmbeddings,
      maxBatchSize: settings.maxBatchSize,
      batchTimeoutMs: settings.batchTimeoutMs,
      maxRunCost: this.cap?.maxRunPatches ?? Infinity,
    };
    this.cache = new EncoderCache(settings.cacheBytes);
    this.groupsPerPiece = runner.clipGroupsApart === true ? (settings.video?.streamGroups ?? null) : null;
  }

  protected admit(msg: AddRequest<EncoderArgs>): EncoderRequest {
    const items = new Map((msg.args.encode ?? []).map((i) => [i.item, i]));
    if (items.size === 0)
      throw new ChorusError(
        ErrorCodes.REQUEST_INVALID,
        `request ${msg.requestId} reached encoder ${this.ctx.spec.stageId} with no items`,
      );
    return {
      requestId: msg.requestId,
      sampling: msg.sampling,
      downstream: msg.downstream,
      numOutputs: 0,
      items,
      delivered: new Set(),
      cacheSalt: msg.cacheSalt,
    };
  }

  protected onChunk(req: EncoderRequest, chunk: ReceivedChunk): void {
    const body = chunk.body;
    const item = body?.kind === 'media' ? req.items.get(body.item) : undefined;
    if (!body || body.kind !== 'media' || !item) {
      return this.fail(
        req,
        new ChorusError(
          ErrorCodes.FRAME_INVALID,
          `encoder ${this.ctx.spec.stageId} got a chunk of ${req.requestId} that is not a planned media item`,
        ),
      );
    }
    this.mediaItemsReceived++;
    this.mediaBytesReceived += body.bytes.byteLength;
    let prepared: PreparedItem;
    // Bytes seen before map to their content key without decoding them again: a hit then costs a hash of the
    // bytes, not a decode (~105 ms for 30 s of audio). New bytes decode once, and their content key (same sound
    // as WAV or pcm16, same picture re-encoded) is remembered for them.
    // Within the request's cache partition: another salt's bytes map to another content key, encoded apart.
    const bytesKey = saltedBytesKey(bytesKeyOf(body), req.cacheSalt);
    const seen = this.contentKeys.get(bytesKey);
    if (seen !== undefined) {
      this.decodesSkipped++;
      prepared = {
        key: seen,
        numEmbeddings: item.numEmbeddings,
        input: () => prepareItem(item, body, this.settings, this.runner.identity, req.cacheSalt).input(),
      };
    } else {
      try {
        prepared = prepareItem(item, body, this.settings, this.runner.identity, req.cacheSalt);
      } catch (err) {
        return this.deliverError(req.requestId, item.item, err);
      }
      this.contentKeys.set(bytesKey, prepared.key);
    }
    const lookup = this.cache.acquire(
      prepared.key,
      req.requestId,
      prepared.numEmbeddings * this.runner.outputSize * Float32Array.BYTES_PER_ELEMENT,
    );
    if (lookup.status === 'hit') return this.deliver(req.requestId, item.item, lookup.embeddings, prepared.key);
    if (lookup.status === 'pending') {
      const inPieces = this.inPieces.get(prepared.key);
      const job = this.jobs.get(prepared.key) ?? inPieces?.job;
      if (!job)
        return this.deliverError(
          req.requestId,
          item.item,
          new ChorusError(ErrorCodes.INTERNAL, `cache entry of ${item.what} is pending with no encode queued`),
        );
      job.waiters.push({ requestId: req.requestId, item: item.item });
      // A clip half encoded: this waiter gets the pieces done so far at once, and the rest as they come.
      if (inPieces && inPieces.rowsDone > 0) this.sendPiece(req.requestId, item.item, concatFloat32(inPieces.done), 0);
      return;
    }
    this.jobs.set(prepared.key, {
      id: prepared.key,
      modality: modalityOfBody(body).name,
      numEmbeddings: prepared.numEmbeddings,
      cost: prepared.numEmbeddings * (this.cap?.patchesPerRow ?? 0),
      enqueuedAtMs: Date.now(),
      input: prepared.input,
      waiters: [{ requestId: req.requestId, item: item.item }],
    });
  }

  step(): boolean {
    const clip = this.inPieces.values().next().value;
    if (clip) {
      const started = performance.now();
      this.runPiece(clip);
      this.recordStep(1, started, () => clip.job.waiters.map((w) => [w.requestId, 1] as const));
      return true;
    }
    if (this.jobs.size === 0) {
      this.nextFlushAtMs = null;
      return false;
    }
    const plan = planEncoderStep([...this.jobs.values()], this.policy, Date.now());
    this.nextFlushAtMs = plan.nextFlushAtMs;
    if (plan.batches.length === 0) return false;
    const started = performance.now();
    let numItems = 0;
    for (const batch of plan.batches) {
      for (const job of batch) this.jobs.delete(job.id);
      numItems += batch.length;
      this.runBatch(batch);
    }
    this.recordStep(numItems, started, () =>
      plan.batches.flatMap((batch) => batch.flatMap((job) => job.waiters.map((w) => [w.requestId, 1] as const))),
    );
    return true;
  }

  private runBatch(batch: readonly Job[]): void {
    const ready: { job: Job; input: EncoderInput }[] = [];
    for (const job of batch) {
      try {
        ready.push({ job, input: job.input() });
      } catch (err) {
        this.failJob(job, err);
      }
    }
    this.runReady(ready);
  }

  /**
   * One run over the items, checked against the memory cap first (encodeCap.ts): a run over it, or one onnxruntime
   * could not allocate, is split into runs of one item; an item over it alone fails with ENCODE_MEMORY (main then
   * re-encodes a clip with fewer or smaller frames). A failed run fails the items in it, never the stage.
   */
  private runReady(ready: readonly { job: Job; input: EncoderInput }[]): void {
    if (ready.length === 0) return;
    const over = overMemoryCap(
      this.cap,
      ready.map((r) => r.input),
    );
    if (over && ready.length > 1) return this.runAlone(ready);
    if (over) return this.failJob(ready[0].job, over);
    const per = this.groupsPerPiece;
    const inPieces = ready.filter((r) => per !== null && r.input.modality === 'video' && r.input.gridT > per);
    for (const { job, input } of inPieces)
      this.inPieces.set(job.id, { job, clip: input as VideoPatches, nextGroup: 0, done: [], rowsDone: 0 });
    const whole = ready.filter((r) => !inPieces.includes(r));
    if (whole.length === 0) return;
    let rows: Float32Array[];
    try {
      rows = this.runner.encode(whole.map((r) => r.input));
    } catch (err) {
      const memory = allocationFailure(err);
      if (memory && whole.length > 1) return this.runAlone(whole);
      for (const r of whole) this.failJob(r.job, memory ?? err);
      return;
    }
    this.runs++;
    this.itemsEncoded += whole.length;
    whole.forEach(({ job }, i) => {
      this.cache.complete(job.id, rows[i]);
      for (const w of job.waiters) this.deliver(w.requestId, w.item, rows[i], job.id);
    });
  }

  /**
   * The next piece of a clip (groupsPerPiece temporal groups): its rows go to every waiter at once, the last piece's
   * with the content key once the whole clip is in the cache. A failed piece fails the clip (the Thinker fails a
   * request whose clip's pieces it had prefilled: they cannot be cut out).
   */
  private runPiece(p: ClipInPieces): void {
    const to = Math.min(p.clip.gridT, p.nextGroup + this.groupsPerPiece!);
    let rows: Float32Array;
    try {
      [rows] = this.runner.encode([clipGroups(p.clip, p.nextGroup, to)]);
    } catch (err) {
      this.inPieces.delete(p.job.id);
      return this.failJob(p.job, allocationFailure(err) ?? err);
    }
    this.runs++;
    const offset = p.rowsDone;
    p.nextGroup = to;
    p.done.push(rows);
    p.rowsDone += rows.length / this.runner.outputSize;
    if (to < p.clip.gridT) {
      for (const w of p.job.waiters) this.sendPiece(w.requestId, w.item, rows, offset);
      return;
    }
    this.inPieces.delete(p.job.id);
    this.itemsEncoded++;
    this.cache.complete(p.job.id, concatFloat32(p.done));
    for (const w of p.job.waiters) this.deliver(w.requestId, w.item, rows, p.job.id, offset);
  }

  private runAlone(ready: readonly { job: Job; input: EncoderInput }[]): void {
    this.runsSplit++;
    for (const r of ready) this.runReady([r]);
  }

  private failJob(job: Job, err: unknown): void {
    this.cache.fail(job.id);
    for (const w of job.waiters) this.deliverError(w.requestId, w.item, err);
  }

  /**
   * The item's rows from row `offset` on (all of them, or a clip's last piece), the content key with them: the
   * Thinker keeps the item's rows under it for the EC store.
   */
  private deliver(requestId: string, item: number, rows: Float32Array, contentKey: string, offset = 0): void {
    const width = this.runner.outputSize;
    this.sendItem(requestId, item, {
      kind: 'encoderRows',
      item,
      rows,
      numRows: rows.length / width,
      width,
      ...(offset > 0 ? { offset } : {}),
      contentKey,
    });
  }

  /** A piece of a clip's rows (not its last): a chunk of its own, the item not delivered yet. */
  private sendPiece(requestId: string, item: number, rows: Float32Array, offset: number): void {
    const req = this.requests.get(requestId);
    if (!req || req.delivered.has(item)) return;
    const width = this.runner.outputSize;
    const body: EncoderRowsBody = { kind: 'encoderRows', item, rows, numRows: rows.length / width, width, offset };
    this.send(req, req.downstream, body);
  }

  private deliverError(requestId: string, item: number, err: unknown): void {
    this.sendItem(requestId, item, { kind: 'encoderRows', item, error: serializeError(err) });
  }

  /** One chunk per item; the request's last item goes in its final chunk. */
  private sendItem(requestId: string, item: number, body: EncoderRowsBody): void {
    const req = this.requests.get(requestId);
    if (!req || req.delivered.has(item)) return; // aborted meanwhile, or this item was answered already
    req.delivered.add(item);
    req.numOutputs++;
    if (req.delivered.size === req.items.size) this.finish(req, 'stop', () => body);
    else this.send(req, req.downstream, body);
  }

  protected freeState(req: EncoderRequest): void {
    this.cache.releaseRequest(req.requestId);
    for (const job of [...this.jobs.values(), ...[...this.inPieces.values()].map((p) => p.job)]) {
      const rest = job.waiters.filter((w) => w.requestId !== req.requestId);
      if (rest.length === job.waiters.length) continue;
      job.waiters.splice(0, job.waiters.length, ...rest);
      if (rest.length > 0) continue;
      // Nobody waits for it any more: do not spend the encoder on it (nor on the rest of a clip in pieces).
      this.jobs.delete(job.id);
      this.inPieces.delete(job.id);
      this.cache.fail(job.id);
    }
  }

  protected queueDepth(): number {
    return this.jobs.size + this.inPieces.size;
  }

  pause(): void {} // encoding is not paced by the client; the Thinker holds the request back
  resume(): void {}

  override nextWakeAtMs(): number | null {
    return this.jobs.size > 0 ? this.nextFlushAtMs : null;
  }

  override stats(): StageStats {
    const c = this.cache.stats;
    const kind: EncoderKindStats = {
      encoder: {
        cacheHits: c.hits,
        cacheMisses: c.misses,
        cacheEvictions: c.evictions,
        cacheBytes: c.bytes,
        cachePinnedBytes: c.pinnedBytes,
        cacheEntries: c.entries,
        cacheBudgetBytes: this.cache.budgetBytes,
        runs: this.runs,
        itemsEncoded: this.itemsEncoded,
        runsSplit: this.runsSplit,
        decodesSkipped: this.decodesSkipped,
        queuedItems: this.jobs.size + this.inPieces.size,
        mediaItemsReceived: this.mediaItemsReceived,
        mediaBytesReceived: this.mediaBytesReceived,
        ...(this.runner.windowStats ?? {}),
      },
    };
    return { ...super.stats(), kind };
  }
}
