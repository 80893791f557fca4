/**
 * The prefix cache of an autoregressive stage (Thinker, Talker): finished requests leave the KV of their computed
 * positions here, and a new request adopts the longest cached prefix of its own inputs and computes only the rest.
 *
 * Entries are named by blocks: positions [k * B, (k + 1) * B) of a sequence make block k, named by a chained
 * content hash (blockHashes.ts: the previous block's name + the block's inputs), so a block's name stands for the
 * whole prefix up to its end. Two sequences share a block name exactly when their inputs agree up to there.
 *
 * Storage is per entry, not per block: the runners feed ONNX one contiguous past per batch, so a paged layout would
 * gather blocks into a batch store every step anyway; an entry is one runner sequence holding `length` positions
 * (a whole number of blocks). Adopting part of an entry copies those positions into the adopting sequence; adopting
 * all of it (a conversation's next turn) takes the entry out and moves its KV, since a copy of a long history costs
 * its page faults (tens of ms for 3,000 positions) and the request's own entry will hold it all again. Either way
 * an entry is never "in use" and can be evicted at any time. An entry whose chain is a prefix of a newer entry's holds
 * nothing the newer does not (a conversation's turn N + 1 contains turn N): it is freed when the newer arrives, so a
 * conversation costs one entry, not one per turn. Entries that branch (a shared system prompt under many
 * conversations) each hold their own copy of the shared part: counted in full against the byte budget.
 *
 * Pure bookkeeping (no model, no I/O): the core frees an entry's runner sequence through `free`.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { PrefixCacheSettings } from '../common/graph.ts';

export interface CacheEntry<T> {
  /** The runner sequence holding the KV (never a request id). */
  readonly seqId: string;
  /** Block names, in order; the entry holds blocks.length * blockPositions positions. */
  readonly blocks: readonly string[];
  /** KV bytes and any rows kept beside them. */
  readonly bytes: number;
  /** Who made it (a Realtime session's prefix key): `release(owner)` frees its entries early. */
  readonly owner: string | null;
  /** What the stage keeps beside the KV (the Thinker: each position's input embedding and hidden state). */
  readonly data: T;
}

export interface PrefixHit<T> {
  readonly entry: CacheEntry<T>;
  /** Leading blocks of the lookup that the entry holds. */
  readonly blocks: number;
}

export interface PrefixCacheStats {
  /** Entries held now, and their bytes (KV and what is kept beside it). */
  readonly retained: number;
  readonly retainedBytes: number;
  /** Since start: lookups that adopted a prefix, the positions adopted (hits), and prompt positions looked up that
   * the cache did not hold (misses). */
  readonly reuses: number;
  readonly reusedTokens: number;
  readonly missedTokens: number;
  /** Entries dropped for the byte budget (not those replaced by a longer entry, nor released by their owner). */
  readonly evictions: number;
  /** A Thinker's blocks, for main's router (KV-aware routing): what a prompt sent here would find. */
  readonly held?: HeldBlocks;
}

/**
 * What a stage instance's prefix cache holds, as a summary small enough to go with every stats report (~12 bytes a
 * block: a 128 MiB Thinker cache of the tiny preset holds ~1,000). Names are shortened (ROUTING_NAME_CHARS): a
 * collision costs a routing choice, never an answer (the instance matches full names).
 */
export interface HeldBlocks {
  /** The root of the names' chain (blockNames.ts) and the positions of a block: how to name a prompt alike. */
  readonly root: string;
  readonly blockPositions: number;
  readonly names: readonly string[];
}

/**
 * Why a budget cannot hold one block of KV (the cache would drop every entry it is given), or null when it can: the
 * one rule, asked by the config loader of a generated model (its KV size is known from the config) and by the stage
 * of the model it loaded (checkPrefixBudget: a file model's KV size is known only then).
 */
export function prefixBudgetProblem(settings: PrefixCacheSettings, kvBytesPerPosition: number): string | null {
  const blockBytes = settings.blockPositions * kvBytesPerPosition;
  if (settings.maxBytes >= blockBytes) return null;
  return (
    `${settings.maxBytes} bytes cannot hold one block (${settings.blockPositions} positions x ${kvBytesPerPosition} ` +
    `bytes of KV): raise it (e.g. 64MiB), lower block_positions, or set prefix_cache: false`
  );
}

/** Refuses, at the stage, a budget that cannot hold one block of the loaded model's KV. */
export function checkPrefixBudget(settings: PrefixCacheSettings, kvBytesPerPosition: number): void {
  const problem = prefixBudgetProblem(settings, kvBytesPerPosition);
  if (problem) throw new ChorusError(ErrorCodes.CONFIG_INVALID, `engine.prefix_cache.max_bytes: ${problem}`);
}

export class PrefixCache<T> {
  /** Entries in LRU order: the first is the least recently used (Map keeps insertion order). */
  readonly #entries = new Map<string, CacheEntry<T>>();
  /** Block name -> the entries holding that block. */
  readonly #holders = new Map<string, Set<CacheEntry<T>>>();
  #bytes = 0;
  #reuses = 0;
  #hitPositions = 0;
  #missPositions = 0;
  #evictions = 0;
  /** Changes whenever the set of held block names may have: a summary is rebuilt only then. */
  #version = 0;

  constructor(
    readonly blockPositions: number,
    readonly maxBytes: number,
    private readonly free: (seqId: string) => void,
  ) {
    if (!Number.isInteger(blockPositions) || blockPositions < 1)
      throw new RangeError(`blockPositions must be an integer >= 1, got ${blockPositions}`);
  }

  /** The entry holding the most leading blocks of `blocks` (the most recently used among equals), or null. */
  lookup(blocks: readonly string[]): PrefixHit<T> | null {
    // Chained names make matches prefix-closed: if block k is held, so are blocks 0..k of the same entry.
    for (let k = blocks.length - 1; k >= 0; k--) {
      const holders = this.#holders.get(blocks[k]);
      if (!holders || holders.size === 0) continue;
      let entry: CacheEntry<T> | undefined;
      for (const e of holders) entry = e; // the last added: the freshest
      this.touch(entry!);
      return { entry: entry!, blocks: k + 1 };
    }
    return null;
  }

  /** Whether some entry holds more than the first `blocks` (>= 1) blocks of this chain (a longer match may come). */
  extendsBeyond(chain: readonly string[], blocks: number): boolean {
    const holders = this.#holders.get(chain[blocks - 1]);
    return holders !== undefined && [...holders].some((e) => e.blocks.length > blocks);
  }

  /** Whether `owner` made any entry held now. */
  owns(owner: string): boolean {
    for (const e of this.#entries.values()) if (e.owner === owner) return true;
    return false;
  }

  /** Counts a lookup's outcome: `hit` positions adopted of `looked` that the request computes or adopts. */
  record(hit: number, looked: number): void {
    if (hit > 0) this.#reuses++;
    this.#hitPositions += hit;
    this.#missPositions += Math.max(0, looked - hit);
  }

  /**
   * Adds an entry (its sequence now belongs to the cache). Entries it contains are freed; then the least recently
   * used go while over budget. An entry larger than the whole budget is freed at once.
   */
  insert(entry: CacheEntry<T>): void {
    if (entry.blocks.length === 0 || this.#entries.has(entry.seqId)) {
      if (!this.#entries.has(entry.seqId)) this.free(entry.seqId);
      return;
    }
    entry.blocks.forEach((name, k) => {
      for (const older of [...(this.#holders.get(name) ?? [])]) if (older.blocks.length === k + 1) this.remove(older);
    });
    this.#entries.set(entry.seqId, entry);
    this.#bytes += entry.bytes;
    this.#version++;
    for (const name of entry.blocks) {
      let holders = this.#holders.get(name);
      if (!holders) this.#holders.set(name, (holders = new Set()));
      holders.add(entry);
    }
    for (const old of this.#entries.values()) {
      if (this.#bytes <= this.maxBytes) break;
      this.remove(old);
      this.#evictions++;
    }
  }

  /**
   * Takes an entry out of the cache without freeing its sequence: the caller now owns it (a request that adopts a
   * whole entry moves its KV instead of copying it; its own entry, a superset, comes back when it ends).
   */
  take(entry: CacheEntry<T>): void {
    this.remove(entry, false);
  }

  /** Frees the entries `owner` made (its session closed). */
  release(owner: string): void {
    for (const e of [...this.#entries.values()]) if (e.owner === owner) this.remove(e);
  }

  /** Frees everything (the stage closes). */
  clear(): void {
    for (const e of [...this.#entries.values()]) this.remove(e);
  }

  /** Every block name held now (each once, however many entries hold it). */
  heldNames(): IterableIterator<string> {
    return this.#holders.keys();
  }

  /** Bumped by every insert and removal: equal versions, equal heldNames(). */
  get version(): number {
    return this.#version;
  }

  get stats(): PrefixCacheStats {
    return {
      retained: this.#entries.size,
      retainedBytes: this.#bytes,
      reuses: this.#reuses,
      reusedTokens: this.#hitPositions,
      missedTokens: this.#missPositions,
      evictions: this.#evictions,
    };
  }

  private touch(entry: CacheEntry<T>): void {
    this.#entries.delete(entry.seqId);
    this.#entries.set(entry.seqId, entry);
  }

  private remove(entry: CacheEntry<T>, free = true): void {
    if (!this.#entries.delete(entry.seqId)) return;
    this.#bytes -= entry.bytes;
    this.#version++;
    for (const name of entry.blocks) {
      const holders = this.#holders.get(name);
      holders?.delete(entry);
      if (holders?.size === 0) this.#holders.delete(name);
    }
    if (free) this.free(entry.seqId);
  }
}
