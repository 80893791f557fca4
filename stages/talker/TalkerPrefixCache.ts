/**
 * The Talker's prefix cache. Its prompt positions are a function of the Thinker's prompt positions alone (one
 * conditioning row each, fed with the begin-of-speech code, before any frame is sampled), so the KV of a prompt
 * prefix is named by the rows themselves (src/sched/blockNames.ts), or after the Thinker's names of the same blocks
 * when it sends them (a Thinker with a prefix cache), and a conversation's next turn, whose prompt
 * starts with the last turn's prompt, adopts it and computes the new rows only. Positions past the prompt were fed
 * sampled frames, which the next turn's rows for the same text are not: only prompt positions are kept.
 */
import type { PrefixCacheSettings } from '../../src/common/graph.ts';
import type { TalkerRunner } from '../types.ts';
import { createHash } from 'node:crypto';
import type { PromptBlocks } from '../../src/common/payloads.ts';
import { blockNames, rowBytes, saltedRoot } from '../../src/sched/blockNames.ts';
import { checkPrefixBudget, PrefixCache, type PrefixCacheStats as PrefixStats } from '../../src/sched/PrefixCache.ts';

type Runner = Pick<
  TalkerRunner,
  'free' | 'moveSequence' | 'copySequence' | 'kvBytes' | 'kvBytesPerToken' | 'conditionDim'
>;

export class TalkerPrefixCache {
  private readonly cache: PrefixCache<null>;
  private entrySeq = 0;

  constructor(
    private readonly settings: PrefixCacheSettings,
    /** Names the model: another model's blocks never match. */
    private readonly modelKey: string,
    private readonly runner: Runner,
  ) {
    checkPrefixBudget(settings, runner.kvBytesPerToken);
    this.cache = new PrefixCache(settings.blockPositions, settings.maxBytes, (seqId) => runner.free(seqId));
  }

  /** Whether the Thinker's names of the prompt's blocks serve (namesOf reads no row then). */
  namesGiven(promptRows: number, thinker?: PromptBlocks): boolean {
    const B = this.settings.blockPositions;
    return thinker?.positions === B && thinker.names.length === Math.floor(promptRows / B);
  }

  /**
   * Names of the whole blocks of prompt rows [0, promptRows) in `rows` (row-major, conditionDim wide): after the
   * Thinker's names of the same blocks when it sent them (one hash a block), else by hashing the rows.
   */
  namesOf(rows: Float32Array, promptRows: number, thinker?: PromptBlocks, cacheSalt?: string): string[] {
    if (thinker && this.namesGiven(promptRows, thinker)) {
      // The rows are a function of what a Thinker name stands for (its model, inputs, position and cache salt): this
      // Talker's model and that name name them.
      return thinker.names.map((name) =>
        createHash('sha256').update(this.modelKey).update(name).digest('base64url').slice(0, 22),
      );
    }
    const d = this.runner.conditionDim;
    return blockNames(saltedRoot(this.modelKey, cacheSalt), this.settings.blockPositions, promptRows, (hash, p) => {
      hash.update(rowBytes(rows.subarray(p * d, (p + 1) * d)));
      return true;
    }).names;
  }

  /** Copies the longest cached prefix of these blocks into the request's sequence; returns its positions. */
  adopt(requestId: string, blocks: readonly string[], promptRows: number): number {
    const hit = this.cache.lookup(blocks);
    const n = hit ? hit.blocks * this.settings.blockPositions : 0;
    this.cache.record(n, promptRows);
    if (n === 0) return 0;
    const { entry } = hit!;
    if (hit!.blocks === entry.blocks.length) {
      this.cache.take(entry); // all of it: moved, not copied (PrefixCache)
      this.runner.moveSequence(entry.seqId, requestId, n);
    } else {
      this.runner.copySequence(entry.seqId, requestId, n);
    }
    return n;
  }

  /** The request ended with `computed` prompt positions in KV: their whole named blocks go into the cache. */
  retain(requestId: string, blocks: readonly string[], computed: number): void {
    const kept = blocks.slice(0, Math.floor(computed / this.settings.blockPositions));
    if (kept.length === 0) return;
    const seqId = `prefix ${this.entrySeq++}`; // a space: never a request id
    this.runner.moveSequence(requestId, seqId, kept.length * this.settings.blockPositions);
    this.cache.insert({ seqId, blocks: kept, bytes: this.runner.kvBytes(seqId), owner: null, data: null });
  }

  clear(): void {
    this.cache.clear();
  }

  get stats(): PrefixStats {
    return this.cache.stats;
  }
}
