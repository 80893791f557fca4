/**
 * Where each prompt-prefix key lives (GenerateRequest.prefix): the Thinker instance that retains a key's KV is the
 * only one that can reuse it, so every request with the key goes there while it is ready. A key whose instance is
 * gone (restarted, lost) starts over on the replica the usual choice picks: the KV died with the process.
 */
import type { StageSpec } from '../common/graph.ts';
import type { InstanceView } from './pool/StageInstance.ts';

export class PrefixRoutes {
  readonly #instanceOf = new Map<string, string>();

  constructor(private readonly instances: ReadonlyMap<string, InstanceView>) {}

  /** The replica of `spec` for a request: the key's instance when it has one that is ready, else `pick()`. */
  pick(spec: StageSpec, key: string | undefined, pick: () => InstanceView): InstanceView {
    if (key === undefined) return pick();
    const pinned = this.instances.get(this.#instanceOf.get(key) ?? '');
    if (pinned?.spec === spec && pinned.status === 'ready') return pinned;
    const chosen = pick();
    this.#instanceOf.set(key, chosen.instance);
    return chosen;
  }

  /** Forgets the key; returns the instance that may hold its KV (to be told to free it). */
  release(key: string): string | undefined {
    const instance = this.#instanceOf.get(key);
    this.#instanceOf.delete(key);
    return instance;
  }
}
