/**
 * Main's side of the encoder-output (EC) store: the index (EcIndex: budget, LRU, pins, TTL) over what the Thinker
 * instances keep, the Redis housekeeping the index decides (renew a TTL on use, delete what it evicts, sweep the
 * prefix at shutdown), and the copies each Thinker instance must forget, handed to its next `add`.
 *
 * Before a request's media goes anywhere, plan() asks the index for each item by the hash of its bytes as received
 * and the identity of the encoder stage that would encode it: a hit is pinned for the request and its rows are
 * taken by the Thinker (its own copy, else Redis); only misses are sent to encoders.
 */
import { randomBytes } from 'node:crypto';
import { diagnostics } from '../../common/diagnostics.ts';
import type { EcStoreSettings } from '../../common/graph.ts';
import type { Logger } from '../../common/log.ts';
import { EcRedis } from '../../../transport/registry.ts';
import type { EcDrop, EcItemPlan, StageToMain } from '../../worker/messages.ts';
import { EcIndex, ecItemKey, type EcWhere } from './EcIndex.ts';

/** A media item of a request, as the store looks it up. */
export interface EcItemQuery {
  readonly index: number;
  /** bytesKeyOf(the item's media body): hash of the bytes as received, with their format. */
  readonly bytesKey: string;
  readonly encoderStageId: string;
}

type EcStored = Extract<StageToMain, { type: 'ec_stored' }>;

export class EcStore {
  readonly #index: EcIndex;
  /** Encoder stage -> the identity its instances reported (null: they disagree, so nothing is looked up). */
  readonly #identities = new Map<string, string | null>();
  /** Thinker instance -> copies it must forget (content key -> the newest copy seq the drop covers). */
  readonly #drops = new Map<string, Map<string, number>>();
  /** Holder seq of each copy main indexed: (instance, content key) -> seq. */
  readonly #seqs = new Map<string, number>();

  /** This run's keys in Redis: `{key_prefix}:ec:{run}:{contentKey}` (null without Redis). */
  readonly namespace: string | null;

  private constructor(
    readonly settings: EcStoreSettings,
    private readonly redis: EcRedis | null,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    // The index forgets entries a little before Redis expires them: Redis's TTL starts at the Thinker's SET, the
    // index's only when the news reaches main, and a hit on a key Redis just dropped would fail its request.
    const marginMs = Math.min(1000, settings.ttlMs / 10);
    this.#index = new EcIndex({ budgetBytes: settings.budgetBytes, ttlMs: settings.ttlMs - marginMs });
    this.namespace = settings.redis ? `${settings.redis.keyPrefix}:ec:${randomBytes(6).toString('hex')}` : null;
  }

  static async open(settings: EcStoreSettings, log: Logger, now: () => number = Date.now): Promise<EcStore> {
    const redis = settings.redis
      ? await EcRedis.open({ ...settings.redis, name: 'main-ec' }, (err) =>
          log.debug({ err: String(err) }, 'EC store Redis link error'),
        )
      : null;
    return new EcStore(settings, redis, log, now);
  }

  /** An encoder instance of `stageId` is ready with this identity (READY facts). */
  noteEncoder(stageId: string, identity: string): void {
    const known = this.#identities.get(stageId);
    if (known === undefined) this.#identities.set(stageId, identity);
    else if (known !== null && known !== identity) {
      // Rows of one would be served for the other: look nothing up for this stage any more.
      this.log.warn({ stage: stageId, identities: [known, identity] }, 'EC store: encoder instances differ; off');
      this.#identities.set(stageId, null);
    }
  }

  /**
   * Where the rows of an item are (pure read: no pin, no use): for routing. Null: a miss (encode it). A hit can
   * be taken by the Thinker instances in `localTo` at no cost, and by any instance with one GET when `remote`.
   */
  where(bytesKey: string, encoderStageId: string): EcWhere | null {
    const identity = this.#identities.get(encoderStageId);
    return identity ? this.#index.where(ecItemKey(identity, bytesKey), this.now()) : null;
  }

  /**
   * Plans a request's items for the Thinker instance chosen: hits (pinned until release()) carry their content
   * key; every item with a known encoder identity carries its index key, so its rows are kept once encoded.
   */
  plan(requestId: string, items: readonly EcItemQuery[], thinker: string): Map<number, EcItemPlan> {
    const out = new Map<number, EcItemPlan>();
    const now = this.now();
    const ns = this.namespace === null ? {} : { namespace: this.namespace };
    for (const item of items) {
      const identity = this.#identities.get(item.encoderStageId);
      if (!identity) continue;
      const itemKey = ecItemKey(identity, item.bytesKey);
      const found = this.#index.where(itemKey, now);
      const usable = found && (found.localTo.has(thinker) || found.remote);
      if (!usable) {
        diagnostics.ecLookup.publish({ where: 'miss' });
        out.set(item.index, { itemKey, ...ns });
        continue;
      }
      this.#index.acquire(itemKey, requestId, now);
      const local = found.localTo.has(thinker);
      // Renewed on every use, local too: another instance may take it from Redis until the index expires it.
      if (found.remote) this.#renew(found.contentKey);
      diagnostics.ecLookup.publish({ where: local ? 'local' : 'remote' });
      out.set(item.index, { itemKey, contentKey: found.contentKey, ...ns });
    }
    this.#flushDropped();
    return out;
  }

  /** A Thinker instance kept an item's rows (ThinkerEc.keep). */
  onStored(holder: string, msg: EcStored): void {
    this.#drops.get(holder)?.delete(msg.contentKey); // it has them again: an older drop must not reach it
    this.#seqs.set(`${holder}\n${msg.contentKey}`, msg.seq);
    this.#index.store(msg.itemKey, msg.contentKey, msg.bytes, { holder, remote: msg.remote }, this.now());
    this.#flushDropped();
  }

  /** The copies `instance` must forget, for its next `add` (then cleared). */
  takeDrops(instance: string): EcDrop[] {
    const drops = this.#drops.get(instance);
    if (!drops || drops.size === 0) return [];
    this.#drops.delete(instance);
    return [...drops].map(([contentKey, seq]) => ({ contentKey, seq }));
  }

  /** The request ended: its pins go (and with them, possibly, entries over the budget). */
  release(requestId: string): void {
    this.#index.release(requestId, this.now());
    this.#flushDropped();
  }

  /** A Thinker found no rows under the item's entry (ThinkerEc's lost take): forget it, so the item encodes again. */
  forgetLost(bytesKey: string, encoderStageId: string): void {
    const identity = this.#identities.get(encoderStageId);
    if (identity && this.#index.forget(ecItemKey(identity, bytesKey))) this.#flushDropped();
  }

  /** A Thinker instance died or was lost: its copies are gone. */
  forgetHolder(instance: string): void {
    this.#drops.delete(instance);
    for (const key of this.#seqs.keys()) if (key.startsWith(`${instance}\n`)) this.#seqs.delete(key);
    this.#index.forgetHolder(instance);
    this.#flushDropped();
  }

  get stats() {
    return this.#index.stats;
  }

  /** Deletes every key of this run in Redis (the stages are stopped by then), and disconnects. */
  async close(): Promise<void> {
    if (!this.redis || this.namespace === null) return;
    try {
      const deleted = await this.redis.deleteAll(this.namespace);
      this.log.debug({ deleted }, 'EC store: Redis keys deleted');
    } catch (err) {
      this.log.warn({ err: String(err) }, 'EC store: could not delete its Redis keys (they expire by their TTL)');
    }
    await this.redis.close();
  }

  #renew(contentKey: string): void {
    this.redis?.touch(this.namespace!, contentKey, this.settings.ttlMs).catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'EC store: renewing a TTL in Redis failed');
    });
  }

  /** Entries that left the index: delete them from Redis, and queue a drop for each holder. */
  #flushDropped(): void {
    const dropped = this.#index.drainDropped();
    if (dropped.length === 0) return;
    const remote: string[] = [];
    for (const d of dropped) {
      if (d.remote) remote.push(d.contentKey);
      for (const holder of d.holders) {
        const seqKey = `${holder}\n${d.contentKey}`;
        const seq = this.#seqs.get(seqKey) ?? 0;
        this.#seqs.delete(seqKey);
        let drops = this.#drops.get(holder);
        if (!drops) this.#drops.set(holder, (drops = new Map()));
        drops.set(d.contentKey, Math.max(seq, drops.get(d.contentKey) ?? 0));
      }
    }
    this.redis?.delete(this.namespace!, remote).catch((err: unknown) => {
      this.log.warn({ err: String(err) }, 'EC store: deleting evicted rows from Redis failed (their TTL will)');
    });
  }
}
