/**
 * What each Thinker instance's prefix cache holds, as main knows it from the instances' stats reports (HeldBlocks:
 * the names of the blocks held, shortened, with the root and block size they were named with), for KV-aware
 * routing: how many leading blocks of a prompt an instance would find in its cache (reference 001's overlap).
 *
 * A report replaces the instance's whole set (a summary, not events: a lost or late report is corrected by the next,
 * 250 ms later, and no sequence can go out of step); an instance lost, restarted or reloaded is forgotten at once.
 * Between reports main predicts: a request that ended on an instance left its prompt's blocks there (every ending
 * does), so they count as held for a while (YAML `kv_prediction_ms`, default PREDICTION_MS), by when reports made
 * after that ending have come (a client that sends its next turn as soon as an answer ends would otherwise be routed
 * on a report older than that answer).
 * Memory is bounded by what reports carry (MAX_HELD_NAMES a report) times the instances, plus the prompts of the
 * last prediction window.
 *
 * Main names a prompt's blocks as the Thinker does (blockNames.ts) as far as it holds the inputs: token ids and
 * keyed media (a video: its block key and offset) up to its first other media position (those are named by their
 * rows, which only the Thinker has), from the root salted with the request's cache salt as the Thinker's are
 * (saltedRoot). A second question about a clip is routed to the Thinker that holds the clip's KV.
 *
 * A prompt is named once (one hash a block) for everything main asks of it: the overlaps at its route, the queue's
 * count of what it shares with the requests ahead of it (QueuedPrefill.ts), the prediction when it ends. names()
 * keeps the names beside the prompt object (a WeakMap: they go with the request), so callers pass the same object.
 * They are hashed as far as asked (TokenBlockChain): the route's overlaps stop at the first block no instance holds,
 * so a prompt nobody shares hashes one block on its way to its adds; the queue's charge and the prediction, booked
 * after the adds, hash the rest.
 */
import type { HeldBlocks } from '../../sched/PrefixCache.ts';
import { ROUTING_NAME_CHARS, saltedRoot, TokenBlockChain, type KeyedSpan } from '../../sched/blockNames.ts';

interface InstanceBlocks {
  readonly root: string;
  readonly blockPositions: number;
  readonly names: ReadonlySet<string>;
  /** The report these names were last checked against: the same report again is not compared name by name. */
  report: HeldBlocks | null;
  /** Names of prompts that ended here since, and until when they count (ms on the caller's clock). */
  readonly predicted: Map<string, number>;
}

/** How a cache names its blocks: the root of the chain and the positions of a block. */
export type Naming = Pick<HeldBlocks, 'root' | 'blockPositions'>;

/** How long a prompt that ended on an instance counts as held there without a report saying so (the default). */
export const PREDICTION_MS = 1000;

/** A prompt as the router names it: its token ids and where its first media position is (or its length). */
export interface NamedPrompt {
  readonly tokenIds: readonly number[];
  /** Positions [0, namable) hold tokens or keyed media only. */
  readonly namable: number;
  /** Media spans named by their item's block key (blockNames.ts KeyedSpan). */
  readonly keyed?: readonly KeyedSpan[];
  /** The request's cache partition (PreparedPrompt.cacheSalt): its blocks are named within it, as the Thinker does. */
  readonly cacheSalt?: string;
}

/** Names of a prompt's whole blocks of [0, namable) under one naming (`key`: its block size and root). */
interface PromptNames {
  readonly key: string;
  readonly names: TokenBlockChain;
}

export class KvIndex {
  readonly #instances = new Map<string, InstanceBlocks>();
  /** Each prompt's names under the naming last asked (replicas of a stage share one): hashed once a request. */
  readonly #named = new WeakMap<NamedPrompt, PromptNames>();

  /** `predictionMs`: how long an ended prompt counts as held (YAML `kv_prediction_ms`); 0: reports only. */
  constructor(private readonly predictionMs = PREDICTION_MS) {}

  /** An instance's report: its set is replaced (predictions stay until they expire); none: it has no cache. */
  update(instance: string, held: HeldBlocks | undefined): void {
    if (!held) {
      this.#instances.delete(instance);
      return;
    }
    const current = this.#instances.get(instance);
    if (current?.report === held) return; // applied when it arrived (Router.reported), read again by a route
    if (current && sameBlocks(current, held)) {
      current.report = held; // most reports between two requests' ends
      return;
    }
    const { root, blockPositions } = held;
    const predicted =
      current?.root === root && current.blockPositions === blockPositions ? current.predicted : new Map();
    this.#instances.set(instance, { root, blockPositions, names: new Set(held.names), report: held, predicted });
  }

  /**
   * A request with this prompt ended on `instance` at `nowMs`: its blocks count as held there for a while. `naming`
   * names them for an instance that has not reported yet (the stage's model and block size, as its cache names).
   */
  predict(instance: string, prompt: NamedPrompt, nowMs: number, naming: Naming): void {
    let held = this.#instances.get(instance);
    if (!held)
      this.#instances.set(instance, (held = { ...naming, names: new Set(), report: null, predicted: new Map() }));
    for (const [name, until] of held.predicted) if (until <= nowMs) held.predicted.delete(name);
    // An ended request computed every position of its prompt (its last too: it sampled there).
    for (const name of this.names(prompt, held).all()) held.predicted.set(name, nowMs + this.predictionMs);
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
  overlaps(instances: readonly string[], prompt: NamedPrompt, nowMs: number): Map<string, number> {
    const out = new Map<string, number>();
    for (const instance of instances) {
      const held = this.#instances.get(instance);
      if (!held) {
        out.set(instance, 0);
        continue;
      }
      const names = this.names(prompt, held);
      const has = (name: string) => held.names.has(name) || (held.predicted.get(name) ?? 0) > nowMs;
      const reusable = reusableBlocks(prompt, held.blockPositions);
      let blocks = 0;
      while (blocks < reusable && has(names.at(blocks))) blocks++;
      out.set(instance, blocks * held.blockPositions);
    }
    return out;
  }

  /** Instances known to hold something (for tests and /metrics). */
  get size(): number {
    return this.#instances.size;
  }

  /**
   * Names (shortened, as reports carry them) of the prompt's whole blocks in [0, namable): the blocks a request leaves
   * in its Thinker's cache. Those it may find there are the first reusableBlocks() of them. Named once per prompt
   * object and naming, each block when first asked for; the names are chained, so a shorter limit's names are a
   * prefix of these.
   */
  names(prompt: NamedPrompt, naming: Naming): TokenBlockChain {
    const key = `${naming.blockPositions} ${naming.root}`; // one prompt: one salt for every instance
    const known = this.#named.get(prompt);
    if (known?.key === key) return known.names;
    const root = saltedRoot(naming.root, prompt.cacheSalt);
    const { tokenIds, namable, keyed } = prompt;
    const names = new TokenBlockChain(root, naming.blockPositions, tokenIds, namable, keyed, ROUTING_NAME_CHARS);
    this.#named.set(prompt, { key, names });
    return names;
  }
}

/** Leading blocks a request may adopt: whole blocks before its last position, which it computes (it samples there). */
export function reusableBlocks(prompt: NamedPrompt, blockPositions: number): number {
  return Math.floor(Math.max(0, Math.min(prompt.namable, prompt.tokenIds.length - 1)) / blockPositions);
}

function sameBlocks(a: InstanceBlocks, b: HeldBlocks): boolean {
  if (a.root !== b.root || a.blockPositions !== b.blockPositions || a.names.size !== b.names.length) return false;
  return b.names.every((n) => a.names.has(n));
}
