/**
 * Where each prompt-prefix key lives (GenerateRequest.prefix): the Thinker instance that retains a key's KV is the
 * only one that can reuse it, so every request with the key goes there while it is ready. A key whose instance is
 * gone (restarted, lost) starts over on the replica the usual choice picks: the KV died with the process.
 */
import type { StageSpec } from '../common/graph.ts';
import type { Slot } from './Slot.ts';

export class PrefixRoutes {
  readonly #instanceOf = new Map<string, string>();

  constructor(private readonly slots: ReadonlyMap<string, Slot>) {}

  /** The replica of `spec` for a request: the key's instance when it has one that is ready, else `pick()`. */
  pick(spec: StageSpec, key: string | undefined, pick: () => Slot): Slot {
    if (key === undefined) return pick();
    const pinned = this.slots.get(this.#instanceOf.get(key) ?? '');
    if (pinned?.spec === spec && pinned.status === 'ready') return pinned;
    const slot = pick();
    this.#instanceOf.set(key, slot.instance);
    return slot;
  }

  /** Forgets the key; returns the instance that may hold its KV (to be told to free it). */
  release(key: string): Slot | undefined {
    const instance = this.#instanceOf.get(key);
    this.#instanceOf.delete(key);
    return instance === undefined ? undefined : this.slots.get(instance);
  }
}
