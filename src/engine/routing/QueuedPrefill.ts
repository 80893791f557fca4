/**
 * The prefill queued on each Thinker instance, as routing and admission count it: the prompt positions of the requests
 * admitted to it that have not produced a first token, each request charged only the positions it will compute. That
 * is its prompt less its leading blocks the instance's prefix cache holds (KvIndex.overlaps) and less those a request
 * queued ahead of it there will compute: the Thinker makes a request wait for a running request that computes its
 * leading blocks and copies them (stages/thinker/ThinkerPrefixCache.ts), so of a burst under one long system prompt
 * only the first computes the prompt, the rest their own suffix. Charged whole, four spoken answers under a ~1,000
 * token system prompt were estimated ~3x too slow and the fourth was refused (bench/NOTES.md, "Queued requests that
 * share a prefix").
 *
 * Each instance keeps a count per block name of the queued requests that name it, so a charge is a walk over the
 * request's own names (O(blocks)), and a request leaving the queue (first token, cancelled, failed) takes its names
 * and its charge with it. A charge is fixed when the request joins the queue: if the request ahead that was to compute
 * the shared blocks is cancelled before it does, the one behind computes them uncharged (a rare underestimate, gone at
 * its first token) rather than every charge being recounted on every exit.
 */

/** What a request adds to its Thinker instance's queue. */
export interface QueuedCharge {
  /** Positions it will compute (at least 1: its last, where it samples). */
  readonly tokens: number;
  /** Names of its prompt's blocks (KvIndex.names): a request queued behind it shares them. */
  readonly names: readonly string[];
}

interface InstanceQueue {
  tokens: number;
  /** Block name -> queued requests that name it. */
  readonly blocks: Map<string, number>;
}

export class QueuedPrefill {
  readonly #instances = new Map<string, InstanceQueue>();

  /** Positions queued on `instance`: the sum of its queued requests' charges. */
  tokens(instance: string): number {
    return this.#instances.get(instance)?.tokens ?? 0;
  }

  /**
   * What a request of `promptTokens` would compute on `instance`, whose cache holds its first `cachedPositions`: the
   * leading blocks past those that a queued request names are not computed either (`reusable`: how many of `names`
   * it may adopt at all, KvIndex.reusableBlocks). Chained names make a match prefix-closed, so the walk stops at the
   * first block nobody ahead names.
   */
  charge(
    instance: string,
    request: { promptTokens: number; cachedPositions: number; names: readonly string[]; reusable: number },
    blockPositions: number,
  ): number {
    const queued = this.#instances.get(instance)?.blocks;
    let blocks = Math.floor(request.cachedPositions / blockPositions);
    while (queued && blocks < request.reusable && queued.has(request.names[blocks])) blocks++;
    const shared = Math.max(request.cachedPositions, blocks * blockPositions);
    return Math.max(1, request.promptTokens - shared);
  }

  add(instance: string, charge: QueuedCharge): void {
    let queue = this.#instances.get(instance);
    if (!queue) this.#instances.set(instance, (queue = { tokens: 0, blocks: new Map() }));
    queue.tokens += charge.tokens;
    for (const name of charge.names) queue.blocks.set(name, (queue.blocks.get(name) ?? 0) + 1);
  }

  remove(instance: string, charge: QueuedCharge): void {
    const queue = this.#instances.get(instance);
    if (!queue) return;
    queue.tokens -= charge.tokens;
    for (const name of charge.names) {
      const count = (queue.blocks.get(name) ?? 0) - 1;
      if (count > 0) queue.blocks.set(name, count);
      else queue.blocks.delete(name);
    }
    // Empty: gone, so an instance that left holds no memory here.
    if (queue.blocks.size === 0 && queue.tokens === 0) this.#instances.delete(instance);
  }

  /** Block names queued on `instance` (for tests: none is left once its requests leave the queue). */
  queuedNames(instance: string): number {
    return this.#instances.get(instance)?.blocks.size ?? 0;
  }
}
