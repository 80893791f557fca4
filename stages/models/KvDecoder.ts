/**
 * Runs a decoder session over a group of sequences that each add the same number of new positions, with
 * one KV cache per sequence: SeqKvCache for the Optimum signature (past_key_values -> present, the whole
 * cache back every step), AppendKvCache for the append-only one (cache -> cache_new, the new positions
 * only; what Chorus generates). Sequences of different lengths share a batch by left-padding
 * the past: padded keys get attention_mask 0 (the graph gives them exactly zero weight) and positions come
 * from position_ids, so each sequence computes what it would alone. Grouping by numTokens (the caller's
 * job) avoids padding the new positions as well, and splitting by past length (groupByNumTokens) keeps one
 * long sequence from padding every short one's past to its length.
 */
import * as ort from 'onnxruntime-node';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { AppendKvCache, storeMaxFloats, type AppendLayout } from './AppendKvCache.ts';
import { KvBufferPool } from './KvBufferPool.ts';
import type { KvLayout } from './SeqKvCache.ts';
import { SeqKvCache } from './SeqKvCache.ts';
import type { SyncSession } from './SyncSession.ts';

export interface KvNames {
  /**
   * 'optimum': past [B, H, past, Dh] -> present [B, H, past+S, Dh];
   * 'append': past [past, B, H, Dh] -> present [S, B, H, Dh] (the new positions only).
   */
  readonly cacheLayout: 'optimum' | 'append';
  /** past input names, pairing with present output names: layer l key at 2l, value at 2l + 1. */
  readonly past: readonly string[];
  readonly present: readonly string[];
  readonly hasPositionIds: boolean;
  /** Merged Optimum decoders take a use_cache_branch flag. */
  readonly hasUseCacheBranch: boolean;
}

type SeqCache = SeqKvCache | AppendKvCache;

export interface KvDecoderLimits {
  /** Longest sequence the model supports (positions). */
  readonly maxPositions: number;
  /** Sequences the stage's scheduler runs at once (engine.max_num_seqs): sizes the KV pool; 1 when absent. */
  readonly maxNumSeqs?: number;
}

/** KV buffers kept for reuse by one decoder's append stores (KvBufferPool): a few batches' worth. */
const POOL_BYTES = 256 << 20;

/** One step's past, prepared for either layout. */
interface PreparedStep {
  /** The batch runs on the tensors it already had (no repack, so no bystanders to compact). */
  readonly reuse: boolean;
  readonly pastLen: number;
  /** Past tensor i (layer l key at 2l, value at 2l + 1). */
  past(i: number): ort.Tensor;
  /** Takes the step's present outputs into the caches. */
  adopt(presents: readonly Float32Array[]): void;
}

export class KvDecoder {
  private readonly caches = new Map<string, SeqCache>();
  private readonly pool = new KvBufferPool(POOL_BYTES);
  /** Longest sequence the model supports (positions), for a clear error instead of garbage past it. */
  private readonly maxPositions: number;
  /** The layout with maxPositions, which sizes the append stores' regions. */
  private readonly appendLayout: AppendLayout;
  // attention_mask and position_ids are rebuilt every step; the mask grows with the past (16 rows x 1,500
  // positions is ~190 KB a step). Fresh arrays each step were external memory V8 had to collect (issue 41).
  private readonly maskScratch = new Int64Scratch();
  private readonly positionScratch = new Int64Scratch();

  constructor(
    readonly session: SyncSession,
    readonly layout: KvLayout,
    private readonly names: KvNames,
    limits: KvDecoderLimits,
  ) {
    this.maxPositions = limits.maxPositions;
    this.appendLayout = { ...layout, maxPositions: limits.maxPositions };
    // Regions made now, each tensor a region, so the address space they take is mapped at load (KvBufferPool). Two
    // stores of one sequence for every sequence the scheduler may run (its own and the one a repack builds;
    // prefix-cache entries are stores of one too), and two of the largest batch.
    if (names.cacheLayout === 'append') {
      const seqs = limits.maxNumSeqs ?? 1;
      this.pool.reserve(2 * seqs * 2 * layout.numLayers, storeMaxFloats(this.appendLayout, 1));
      this.pool.reserve(2 * 2 * layout.numLayers, storeMaxFloats(this.appendLayout, seqs));
    }
  }

  pastLength(seqId: string): number {
    return this.caches.get(seqId)?.length ?? 0;
  }

  /** KV bytes one position costs: keys and values of every layer, float32 (known from the signature). */
  get kvBytesPerToken(): number {
    const { numLayers, numKvHeads, headDim } = this.layout;
    return 2 * numLayers * numKvHeads * headDim * Float32Array.BYTES_PER_ELEMENT;
  }

  kvBytes(seqId: string): number {
    return this.caches.get(seqId)?.bytes ?? 0;
  }

  free(seqId: string): void {
    const c = this.caches.get(seqId);
    if (c instanceof AppendKvCache) c.release();
    this.caches.delete(seqId);
  }

  /** Sequence `from`'s cache becomes `to`'s, cut to its first keepPositions positions (in tensors of its own). */
  move(from: string, to: string, keepPositions: number): void {
    const c = this.caches.get(from);
    this.caches.delete(from);
    if (to !== from) this.free(to);
    if (!c) return;
    c.keepFirst(keepPositions);
    this.caches.set(to, c);
  }

  /** Sequence `to` gets a copy of the first keepPositions positions of `from` (which keeps its own). */
  copy(from: string, to: string, keepPositions: number): void {
    const c = this.caches.get(from);
    if (to !== from) this.free(to);
    if (!c) return;
    this.caches.set(to, c.copyFirst(keepPositions));
  }

  /** Sequences left behind in the tensors the participants are leaving get rows of their own. */
  private compactBystanders(participants: readonly SeqCache[]): void {
    const leaving = new Set<unknown>(participants.map((c) => c.storage));
    const taking = new Set(participants);
    for (const c of this.caches.values()) if (!taking.has(c) && leaving.has(c.storage)) c.compact();
  }

  /**
   * One forward: every sequence in seqIds adds numTokens positions. extraFeeds holds the model's other
   * inputs (inputs_embeds, ...) with batch rows in seqIds order. Returns the fetched outputs; the caches
   * have been extended when it returns.
   */
  run(
    seqIds: readonly string[],
    numTokens: number,
    extraFeeds: Record<string, ort.Tensor>,
    fetch: readonly string[],
  ): Record<string, ort.Tensor> {
    const caches = seqIds.map((id) => {
      let c = this.caches.get(id);
      if (!c) {
        c =
          this.names.cacheLayout === 'append'
            ? new AppendKvCache(this.appendLayout, this.pool)
            : new SeqKvCache(this.layout);
        this.caches.set(id, c);
      }
      if (c.length + numTokens > this.maxPositions) {
        throw new ChorusError(
          ErrorCodes.REQUEST_TOO_LARGE,
          `sequence ${id} would reach ${c.length + numTokens} positions; the model supports ${this.maxPositions}: ` +
            `shorten the prompt or max_tokens`,
        );
      }
      return c;
    });
    const step =
      this.names.cacheLayout === 'append'
        ? this.appendStep(caches as AppendKvCache[], numTokens)
        : this.optimumStep(caches as SeqKvCache[], numTokens);
    const feeds = this.stepFeeds(caches, step.pastLen, numTokens, extraFeeds);
    this.names.past.forEach((name, i) => (feeds[name] = step.past(i)));
    const out = this.session.run(feeds, [...fetch, ...this.names.present]);
    if (!step.reuse) this.compactBystanders(caches);
    step.adopt(this.names.present.map((name) => out[name].data as Float32Array));
    return out;
  }

  /** attention_mask (left padding to pastLen), position_ids and use_cache_branch beside extraFeeds. */
  private stepFeeds(
    caches: readonly SeqCache[],
    pastLen: number,
    numTokens: number,
    extraFeeds: Record<string, ort.Tensor>,
  ): Record<string, ort.Tensor> {
    const batch = caches.length;
    const totalLen = pastLen + numTokens;
    const mask = this.maskScratch.take(batch * totalLen);
    const positions = this.positionScratch.take(batch * numTokens);
    caches.forEach((c, b) => {
      mask.fill(1n, b * totalLen + (pastLen - c.length), (b + 1) * totalLen);
      for (let i = 0; i < numTokens; i++) positions[b * numTokens + i] = BigInt(c.length + i);
    });
    const feeds: Record<string, ort.Tensor> = {
      ...extraFeeds,
      attention_mask: new ort.Tensor('int64', mask, [batch, totalLen]),
    };
    if (this.names.hasPositionIds) feeds.position_ids = new ort.Tensor('int64', positions, [batch, numTokens]);
    if (this.names.hasUseCacheBranch)
      feeds.use_cache_branch = new ort.Tensor('bool', new Uint8Array([pastLen > 0 ? 1 : 0]), [1]);
    return feeds;
  }

  /** Optimum layout: a steady batch feeds the last presents back as is; any other batch is packed anew. */
  private optimumStep(caches: readonly SeqKvCache[], numTokens: number): PreparedStep {
    const { numKvHeads, headDim } = this.layout;
    const batch = caches.length;
    const reuse = SeqKvCache.sameBatch(caches);
    const pastLen = reuse ? caches[0].total : Math.max(...caches.map((c) => c.length));
    const past = (i: number) => {
      let data: Float32Array;
      if (reuse) {
        data = caches[0].shared(i);
      } else {
        data = new Float32Array(batch * numKvHeads * pastLen * headDim);
        caches.forEach((c, b) => c.packInto(i, data, b, pastLen));
      }
      return new ort.Tensor('float32', data, [batch, numKvHeads, pastLen, headDim]);
    };
    const adopt = (presents: readonly Float32Array[]) =>
      caches.forEach((c, b) => c.adopt(presents, batch, b, pastLen + numTokens, numTokens));
    return { reuse, pastLen, past, adopt };
  }

  /** Append layout: a steady batch runs on its store as is and appends in place; any other batch gets a new store. */
  private appendStep(caches: readonly AppendKvCache[], numTokens: number): PreparedStep {
    const { numKvHeads, headDim } = this.layout;
    const reuse = AppendKvCache.sameBatch(caches);
    const store = reuse ? caches[0].storage! : AppendKvCache.pack(caches, numTokens);
    const pastLen = store.total;
    const past = (i: number) => new ort.Tensor('float32', store.view(i), [pastLen, caches.length, numKvHeads, headDim]);
    const adopt = (fresh: readonly Float32Array[]) => {
      store.append(fresh, numTokens);
      caches.forEach((c, b) => c.adopt(store, b, numTokens));
    };
    return { reuse, pastLen, past, adopt };
  }
}

/**
 * One reusable int64 buffer for a step's feed: take() gives a zeroed view of the length asked, reallocating
 * (to the next power of two) only when it is longer than any before. The view is valid until the next take():
 * the session reads feeds during run() only.
 */
class Int64Scratch {
  private buffer = new BigInt64Array(0);

  take(length: number): BigInt64Array {
    if (length > this.buffer.length) this.buffer = new BigInt64Array(2 ** Math.ceil(Math.log2(length)));
    return this.buffer.subarray(0, length).fill(0n);
  }
}
