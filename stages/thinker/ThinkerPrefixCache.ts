/**
 * The Thinker's prefix cache, per request (the store is src/sched/PrefixCache.ts): every request looks up the
 * longest cached prefix of its prompt once its inputs can be named that far, adopts a copy of that KV (and of the
 * positions' rows, for a Talker) and computes only the rest; when it ends (finished, cancelled, failed) the KV of
 * the positions it computed goes into the cache for the next request. A conversation's next turn, a chat client
 * resending its history, a shared system prompt and a voice answer after its prefill (src/server/realtime/
 * VoicePrefill.ts) are all this one mechanism.
 *
 * Blocks are named by their inputs (src/sched/blockNames.ts): token ids, and at media positions the media rows
 * themselves, so reuse cannot change an answer whatever the request's history: equal names, equal inputs. A video's
 * positions are named by its block key and offset (the key stands for its rows): they are named before its rows
 * come, so a prompt whose clip is cached past its span adopts that KV and never waits for the clip's encode. A request
 * with a cache salt names from the salted root, so requests of two salts never share a block (docs/security.md).
 *
 * A request with a session key (voice) waits while another request of that key is prefilling (it would compute the
 * same positions beside it), and holds at position 0 while its media rows have not arrived if the key's entries may
 * go further than what can be named yet; `release(key)` frees the key's entries when its session ends.
 *
 * Requests running here count as a source too (SGLang inserts a prompt into its radix tree once prefilled, not when
 * the request ends): a request whose leading blocks a running request shares further than the cache does waits
 * until that request has computed them, then copies them from its live sequence. Without it, 8 requests sent
 * together under one long system prompt computed it 8 times; the cache only helped those that came after one ended.
 */
import type { Hash } from 'node:crypto';
import type { ThinkerRunner } from '../types.ts';
import type { Thinker2Talker } from '../talker/thinker2talker.ts';
import type { Logger } from '../../src/common/log.ts';
import type { PromptBlocks } from '../../src/common/payloads.ts';
import {
  blockNames,
  idBlockNames,
  ROUTING_NAME_CHARS,
  rowBytes,
  saltedRoot,
  writeMediaKey,
  writeTokenId,
} from '../../src/sched/blockNames.ts';
import {
  checkPrefixBudget,
  PrefixCache,
  type HeldBlocks,
  type PrefixCacheStats as PrefixStats,
} from '../../src/sched/PrefixCache.ts';
import { PositionRows } from '../../src/sched/PositionRows.ts';
import type { ScheduledItem } from '../../src/sched/ArScheduler.ts';
import type { ThinkerMedia } from './ThinkerMedia.ts';

/** A request's part in the prefix cache. */
export interface PrefixUse {
  /** The session key (ThinkerArgs.prefix.key), or null. */
  readonly key: string | null;
  /** The request's cache partition (AddRequest.cacheSalt): its blocks are named within it (saltedRoot). */
  readonly cacheSalt?: string;
  readonly prefillOnly: boolean;
  /** Another request of the key is computing its prefix now: wait for it. */
  awaiting: boolean;
  /** The lookup is done (adopted or not); nothing more to wait for. */
  settled: boolean;
  /**
   * The running request whose blocks this one waits for (it computes positions [0, sourceNeed) that this prompt
   * shares), or null.
   */
  source: string | null;
  sourceNeed: number;
  /** Positions adopted from the cache. */
  cachedTokens: number;
  /** The names of the prompt's blocks as far as the lookup could name them. */
  names: readonly string[];
  /**
   * Each computed position's [embedding, hidden state] (a model with hidden states), for the cache's entries; a
   * whole entry taken from the cache brings its own.
   */
  rows: PositionRows | null;
}

/** The part of a request on a Thinker without a prefix cache: settled at once, nothing adopted. */
export function uncachedPrefix(prefillOnly: boolean): PrefixUse {
  return {
    key: null,
    prefillOnly,
    awaiting: false,
    settled: true,
    source: null,
    sourceNeed: 0,
    names: [],
    cachedTokens: 0,
    rows: null,
  };
}

/** What of a Thinker request the cache reads. */
export interface CachedRequest {
  readonly requestId: string;
  readonly promptTokenIds: readonly number[];
  readonly generated: readonly number[];
  readonly toTalker: Thinker2Talker | null;
  readonly media: ThinkerMedia | null;
  readonly prefix: PrefixUse;
}

export interface PrefixCacheHost {
  readonly runner: Pick<
    ThinkerRunner,
    'free' | 'moveSequence' | 'copySequence' | 'kvBytes' | 'hiddenSize' | 'supports' | 'kvBytesPerToken'
  >;
  /** The scheduler starts the request at position n (its first n positions' KV were adopted). */
  startAt(requestId: string, n: number): void;
  /** Positions of the request whose KV is computed. */
  numComputed(requestId: string): number;
  requests(): Iterable<CachedRequest>;
  /** Recomputes what the request may run now (it may have been waiting). */
  refreshAvailable(req: CachedRequest): void;
  readonly log: Logger;
}

export interface ThinkerPrefixCacheOptions {
  readonly maxBytes: number;
  readonly blockPositions: number;
  /** Names the model: blocks of another model never match. */
  readonly modelKey: string;
}

/** Block names a stats report carries at most: ~200 KB, 256 MiB of the tiny preset's KV. */
const MAX_HELD_NAMES = 16_384;

export class ThinkerPrefixCache {
  private readonly cache: PrefixCache<PositionRows | null>;
  /** key -> the prefill-only request computing it now. */
  private readonly producers = new Map<string, string>();
  private readonly keepsRows: boolean;
  private entrySeq = 0;
  private summarized: { version: number; blocks: HeldBlocks } | null = null;
  /** Running request -> the requests waiting for blocks it computes. */
  private readonly waiters = new Map<string, Set<CachedRequest>>();
  /** A split first prefill's first piece's copy, taken at its request's next step (onStep). */
  private readonly later = new Map<string, () => void>();
  /** The request whose end is being handled: no source any more. */
  private ending: string | null = null;

  constructor(
    private readonly options: ThinkerPrefixCacheOptions,
    private readonly host: PrefixCacheHost,
  ) {
    const { runner } = host;
    checkPrefixBudget(options, runner.kvBytesPerToken);
    this.cache = new PrefixCache(options.blockPositions, options.maxBytes, (seqId) => runner.free(seqId));
    this.keepsRows = runner.supports?.hiddenStates !== false && runner.supports?.embeddings !== false;
  }

  /** The cache's counters, with what it holds for main's router (rebuilt only when that changed). */
  get stats(): PrefixStats {
    if (this.summarized?.version !== this.cache.version)
      this.summarized = { version: this.cache.version, blocks: this.summary() };
    return { ...this.cache.stats, held: this.summarized.blocks };
  }

  private summary(): HeldBlocks {
    // The newest names when there are more than a stats report carries (a control message stays far under 1 MiB).
    const names = [...this.cache.heldNames()].slice(-MAX_HELD_NAMES).map((n) => n.slice(0, ROUTING_NAME_CHARS));
    return { root: this.options.modelKey, blockPositions: this.options.blockPositions, names };
  }

  /** A request's part; a prefill-only request with a key becomes the key's producer. */
  claim(requestId: string, key: string | null, prefillOnly: boolean, cacheSalt?: string): PrefixUse {
    const awaiting = key !== null && this.isProducing(key, requestId);
    if (key !== null && prefillOnly) this.producers.set(key, requestId);
    return {
      key,
      ...(cacheSalt !== undefined ? { cacheSalt } : {}),
      prefillOnly,
      awaiting,
      settled: false,
      source: null,
      sourceNeed: 0,
      cachedTokens: 0,
      names: [],
      rows: this.keepsRows ? new PositionRows(this.host.runner.hiddenSize) : null,
    };
  }

  /**
   * A step computed the item's positions with these rows. The first piece of a split first step (item.splitFirst),
   * whose second runs at once on the first packet's path, has its copy taken at the request's next step, before that
   * one's (in position order); an answer that ends between them (cancelled) keeps fewer blocks, never others.
   */
  onStep(req: CachedRequest, item: ScheduledItem, out: { embeds: Float32Array; hidden: Float32Array }): void {
    const earlier = this.later.get(req.requestId);
    this.later.delete(req.requestId);
    earlier?.();
    if (item.splitFirst) {
      this.later.set(req.requestId, () => this.onStep(req, { ...item, splitFirst: false }, out));
      return;
    }
    const { startPosition: start, numTokens: count } = item;
    const { embeds, hidden } = out;
    if (req.prefix.rows && hidden.length > 0) req.prefix.rows.set(start, count, embeds, hidden);
    const waiting = this.waiters.get(req.requestId);
    if (!waiting) return;
    for (const w of [...waiting]) if (start + count >= w.prefix.sourceNeed) this.wake(w);
  }

  /**
   * Looks the request's prompt up once its inputs can be named far enough, and adopts what matches (the scheduler
   * starts it there). True while the request must stay at position 0.
   */
  held(req: CachedRequest): boolean {
    const p = req.prefix;
    if (p.settled) return false;
    if (p.awaiting) return true;
    const promptLength = req.promptTokenIds.length;
    // At least the last prompt position is computed here: it samples the first token.
    const { names, stoppedAtUnknown } = this.namesOf(req, promptLength - 1);
    const hit = this.cache.lookup(names);
    const matched = hit?.blocks ?? 0;
    if (stoppedAtUnknown && matched === names.length && this.mayGoFurther(req, names, matched)) return true;
    const needsRows = req.toTalker !== null || p.rows !== null;
    const fromCache = hit && (!needsRows || hit.entry.data) ? matched : 0;
    const live = this.liveSource(req, names, fromCache, needsRows);
    if (live && !live.ready) {
      this.await(req, live.source, live.blocks * this.options.blockPositions);
      return true;
    }
    this.await(req, null, 0);
    p.settled = true;
    p.names = names;
    const n = (live?.blocks ?? fromCache) * this.options.blockPositions;
    this.cache.record(n, promptLength);
    if (n === 0) return false;
    const textIds = req.promptTokenIds.slice(0, n).filter((_, pos) => req.media?.rowAt(pos) === undefined);
    if (live) {
      this.host.runner.copySequence(live.source.requestId, req.requestId, n, textIds);
      const rows = live.source.prefix.rows;
      if (rows) p.rows?.setRows(0, n, rows.rows(n));
      return this.adopted(req, n, rows);
    }
    const { entry } = hit!;
    const rows = entry.data;
    if (matched === entry.blocks.length) {
      this.cache.take(entry);
      this.host.runner.moveSequence(entry.seqId, req.requestId, n, textIds);
      if (p.rows && rows) p.rows = rows; // the entry's rows are exactly its n positions: moved, as its KV
    } else {
      this.host.runner.copySequence(entry.seqId, req.requestId, n, textIds);
      if (rows) p.rows?.setRows(0, n, rows.rows(n));
    }
    return this.adopted(req, n, rows);
  }

  /** The request starts at position n, its first n positions' KV (and rows) adopted. */
  private adopted(req: CachedRequest, n: number, rows: PositionRows | null): false {
    this.host.startAt(req.requestId, n);
    if (rows) req.toTalker?.onCachedPrompt(n, rows.rows(n));
    req.prefix.cachedTokens = n;
    this.host.log.debug({ requestId: req.requestId, positions: n }, 'prompt prefix reused');
    return false;
  }

  /**
   * The running request that shares the most leading blocks with `names`, if more than the cache gives
   * (`fromCache` blocks); ready once it has computed them (and their rows, where this request needs rows).
   */
  private liveSource(req: CachedRequest, names: readonly string[], fromCache: number, needsRows: boolean) {
    let best: { source: CachedRequest; blocks: number; ready: boolean } | null = null;
    for (const r of this.host.requests()) {
      // Only a settled request has its names, and one ending now has given its KV away.
      if (r === req || !r.prefix.settled || r.requestId === this.ending) continue;
      if (needsRows && !r.prefix.rows) continue;
      const theirs = this.namedSoFar(r);
      let blocks = 0;
      while (blocks < names.length && blocks < theirs.length && names[blocks] === theirs[blocks]) blocks++;
      if (blocks <= (best?.blocks ?? fromCache)) continue;
      const need = blocks * this.options.blockPositions;
      const computed = Math.min(this.host.numComputed(r.requestId), r.prefix.rows?.length ?? Infinity);
      best = { source: r, blocks, ready: computed >= need };
    }
    return best;
  }

  /**
   * A running request's block names: those of its lookup, named again while media rows it settled before may have
   * come since (text names are whole at the lookup).
   */
  private namedSoFar(r: CachedRequest): readonly string[] {
    const p = r.prefix;
    const whole = Math.floor((r.promptTokenIds.length - 1) / this.options.blockPositions);
    if (r.media && p.names.length < whole) p.names = this.namesOf(r, r.promptTokenIds.length - 1).names;
    return p.names;
  }

  /** The request waits for `source` to compute [0, need) (null: it waits for no running request). */
  private await(req: CachedRequest, source: CachedRequest | null, need: number): void {
    const p = req.prefix;
    if (p.source !== null) this.waiters.get(p.source)?.delete(req);
    if (p.source !== null && this.waiters.get(p.source)?.size === 0) this.waiters.delete(p.source);
    p.source = source?.requestId ?? null;
    p.sourceNeed = need;
    if (!source) return;
    let set = this.waiters.get(source.requestId);
    if (!set) this.waiters.set(source.requestId, (set = new Set()));
    set.add(req);
  }

  /** A waiting request looks again (its source computed what it needs, or ended). */
  private wake(req: CachedRequest): void {
    this.host.refreshAvailable(req);
  }

  /**
   * The names of the prompt's whole blocks, for its Talker (TalkerRowsBody.promptBlocks): the lookup's when they
   * reach that far and the prompt has not changed since (a media item dropped cuts it), else named now.
   */
  promptBlocks(req: CachedRequest): PromptBlocks {
    const positions = this.options.blockPositions;
    const whole = Math.floor(req.promptTokenIds.length / positions);
    const p = req.prefix;
    const unchanged = !req.media || req.media.dropped.length === 0;
    if (!unchanged || p.names.length < whole) p.names = this.namesOf(req, req.promptTokenIds.length).names;
    return { names: p.names.slice(0, whole), positions };
  }

  /**
   * The request ended (any way): the KV of the whole blocks it computed goes into the cache, with their rows. Call
   * before the request's KV is freed.
   */
  onEnd(req: CachedRequest): void {
    this.later.delete(req.requestId); // its first piece's copy, if its second never ran
    const p = req.prefix;
    if (p.key !== null && this.producers.get(p.key) === req.requestId) this.producers.delete(p.key);
    this.await(req, null, 0);
    this.retain(req);
    if (p.key !== null) this.wakeAwaiting(p.key);
    // Those waiting for it find what it computed in the cache now (or compute it themselves).
    const waiting = this.waiters.get(req.requestId);
    this.waiters.delete(req.requestId);
    this.ending = req.requestId;
    try {
      for (const w of waiting ?? []) {
        w.prefix.source = null;
        this.wake(w);
      }
    } finally {
      this.ending = null;
    }
  }

  release(key: string): void {
    this.cache.release(key);
  }

  clear(): void {
    this.cache.clear();
  }

  private retain(req: CachedRequest): void {
    const p = req.prefix;
    const computed = this.host.numComputed(req.requestId);
    const B = this.options.blockPositions;
    if (computed < B) return;
    // Rows must cover what is kept; without them (a model without hidden states) the entry serves text only.
    const limit = p.rows ? Math.min(computed, p.rows.length) : computed;
    const { names } = this.namesOf(req, limit);
    const keep = names.length * B;
    if (keep === 0) return;
    const { runner } = this.host;
    const seqId = `prefix ${this.entrySeq++}`; // a space: never a request id
    runner.moveSequence(req.requestId, seqId, keep);
    // The request is over: its rows go into the entry as they are (a copy would touch the whole history again).
    const rows = p.rows;
    rows?.truncate(keep);
    const bytes = runner.kvBytes(seqId) + (rows?.bytes ?? 0);
    this.cache.insert({ seqId, blocks: names, bytes, owner: p.key, data: rows });
  }

  /** Names of the whole blocks in [0, limit) whose inputs are known: prompt then generated tokens. */
  private namesOf(req: CachedRequest, limit: number) {
    const prompt = req.promptTokenIds;
    const media = req.media;
    const root = saltedRoot(this.options.modelKey, req.prefix.cacheSalt);
    if (!media) return idBlockNames(root, this.options.blockPositions, prompt, req.generated, limit);
    return blockNames(root, this.options.blockPositions, limit, (hash: Hash, pos: number) => {
      const id = pos < prompt.length ? prompt[pos] : req.generated[pos - prompt.length];
      if (id === undefined) return false;
      writeTokenId(hash, id);
      const keyed = pos < prompt.length ? media?.blockKeyAt(pos) : undefined;
      if (keyed) {
        writeMediaKey(hash, keyed.key, keyed.offset);
        return true;
      }
      const row = pos < prompt.length ? media?.rowAt(pos) : undefined;
      if (row === null) return false; // rows not here yet
      if (row) hash.update(rowBytes(row));
      return true;
    });
  }

  /**
   * Whether a request whose named blocks are all cached, stopped at media rows not yet here, should wait for them:
   * an entry goes further. Waiting costs nothing then: what it could compute meanwhile is what the cache would give
   * it. Stopped inside the first block (an image or a clip in the first turn's first positions), any entry may
   * begin with that block: it waits when there are entries, at the cost of computing fewer than a block's
   * positions before the rows come.
   */
  private mayGoFurther(req: CachedRequest, names: readonly string[], matched: number): boolean {
    if (this.runningGoesFurther(req, names)) return true;
    if (matched > 0) return this.cache.extendsBeyond(names, matched);
    if (names.length === 0 && this.cache.stats.retained > 0) return true;
    return req.prefix.key !== null && this.cache.owns(req.prefix.key);
  }

  /** A running request's prompt begins with these blocks and names more after them. */
  private runningGoesFurther(req: CachedRequest, names: readonly string[]): boolean {
    for (const r of this.host.requests()) {
      if (r === req || !r.prefix.settled || r.requestId === this.ending) continue;
      const theirs = this.namedSoFar(r);
      if (theirs.length > names.length && names.every((n, i) => theirs[i] === n)) return true;
    }
    return false;
  }

  private isProducing(key: string, requestId: string): boolean {
    const producer = this.producers.get(key);
    return producer !== undefined && producer !== requestId;
  }

  /** The key's producer ended: requests waiting for it look the cache up now. */
  private wakeAwaiting(key: string): void {
    for (const r of this.host.requests()) {
      const p = r.prefix;
      if (p.key !== key || !p.awaiting) continue;
      p.awaiting = this.isProducing(key, r.requestId);
      this.host.refreshAvailable(r);
    }
  }
}
