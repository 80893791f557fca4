/**
 * What each Thinker instance's prefix cache holds, as main knows it from the instances' stats reports (HeldBlocks:
 * the names of the blocks held, shortened, with the root and block size they were named with), for KV-aware
 * routing: how many leading blocks of a prompt an instance would find in its cache (reference 001's overlap).
 *
 * A report replaces the instance's whole set (a summary, not events: a lost or late report is corrected by the next,
 * 250 ms later, and no sequence can go out of step); an instance lost, restarted or reloaded is forgotten at once.
 * Memory is bounded by what reports carry (MAX_HELD_NAMES a report) times the instances.
 *
 * Main names a prompt's blocks as the Thinker does (blockNames.ts) as far as it holds the inputs: token ids up to
 * its first media position (media positions are named by their rows, which only the Thinker has).
 */
import type { HeldBlocks } from '../../sched/PrefixCache.ts';
import { ROUTING_NAME_CHARS, tokenBlockNames } from '../../sched/blockNames.ts';

interface InstanceBlocks {
  readonly root: string;
  readonly blockPositions: number;
  readonly names: ReadonlySet<string>;
}

/** A prompt as the router names it: its token ids and where its first media position is (or its length). */
export interface NamedPrompt {
  readonly tokenIds: readonly number[];
  /** Positions [0, namable) hold tokens only. */
  readonly namable: number;
}

export class KvIndex {
  readonly #instances = new Map<string, InstanceBlocks>();

  /** An instance's report: its set is replaced (an instance without a cache, or an empty one, holds nothing). */
  update(instance: string, held: HeldBlocks | undefined): void {
    if (!held || held.names.length === 0) {
      this.#instances.delete(instance);
      return;
    }
    const current = this.#instances.get(instance);
    if (current && sameBlocks(current, held)) return; // most reports between two requests' ends
    this.#instances.set(instance, { root: held.root, blockPositions: held.blockPositions, names: new Set(held.names) });
  }

  /** Keeps only these instances (the ready ones): the others are gone or restarting. */
  retain(instances: ReadonlySet<string>): void {
    for (const instance of this.#instances.keys()) if (!instances.has(instance)) this.#instances.delete(instance);
  }

  /** The instance is gone, restarted or reloaded: its cache is empty or unknown. */
  forget(instance: string): void {
    this.#instances.delete(instance);
  }

  /**
   * Positions of the prompt's leading blocks each instance holds (0 for an instance it knows nothing of). Prompts
   * are named once per distinct (root, block size): replicas of one stage share both.
   */
  overlaps(instances: readonly string[], prompt: NamedPrompt): Map<string, number> {
    const named = new Map<string, string[]>();
    const out = new Map<string, number>();
    for (const instance of instances) {
      const held = this.#instances.get(instance);
      if (!held) {
        out.set(instance, 0);
        continue;
      }
      const key = `${held.blockPositions} ${held.root}`;
      let names = named.get(key);
      if (!names) named.set(key, (names = this.#name(held, prompt)));
      let blocks = 0;
      while (blocks < names.length && held.names.has(names[blocks])) blocks++;
      out.set(instance, blocks * held.blockPositions);
    }
    return out;
  }

  /** Instances known to hold something (for tests and /metrics). */
  get size(): number {
    return this.#instances.size;
  }

  #name(held: InstanceBlocks, prompt: NamedPrompt): string[] {
    // The Thinker computes at least the prompt's last position (it samples the first token): never named here.
    const limit = Math.min(prompt.namable, prompt.tokenIds.length - 1);
    return tokenBlockNames(held.root, held.blockPositions, prompt.tokenIds, limit).map((n) =>
      n.slice(0, ROUTING_NAME_CHARS),
    );
  }
}

function sameBlocks(a: InstanceBlocks, b: HeldBlocks): boolean {
  if (a.root !== b.root || a.blockPositions !== b.blockPositions || a.names.size !== b.names.length) return false;
  return b.names.every((n) => a.names.has(n));
}
