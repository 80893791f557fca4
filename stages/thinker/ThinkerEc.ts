/**
 * A Thinker instance's part of the encoder-output (EC) store (ec_store:). It keeps the rows of the media items it
 * received from encoders, under their content keys, and (with Redis) writes them there for the other instances;
 * then tells main (`ec_stored`), whose index decides what the store has. A later request whose item main finds in
 * the store comes with that content key instead of an encoder: its rows are taken from this process's copy, else
 * with one Redis GET, and no encoder sees its bytes.
 *
 * Main's index is the authority on what is kept: it pins entries while requests use them, and the copies it
 * evicts come back in the next `add` (ecDrop) to forget. Each copy has a sequence number so that a drop meant for
 * an older copy does not remove one kept again since (the drop and the new `ec_stored` crossed).
 */
import type { EcStoreSettings } from '../../src/common/graph.ts';
import { ErrorCodes, serializeError, type SerializedError } from '../../src/common/errors.ts';
import type { Logger } from '../../src/common/log.ts';
import { EcRedis } from '../../transport/redis/EcRedis.ts';
import type { EcDrop, EcItemPlan, StageToMain } from '../../src/worker/messages.ts';
import type { ThinkerEcStats } from './protocol.ts';
import type { ThinkerMedia } from './ThinkerMedia.ts';

/**
 * Where a hit's rows came from: this process's copy, Redis, nowhere (gone since main's index said hit), or the take
 * failed (a Redis error).
 */
export type EcTakeSource = 'local' | 'redis' | 'lost' | 'failed';

interface Copy {
  readonly rows: Float32Array;
  readonly seq: number;
}

export class ThinkerEc {
  readonly #copies = new Map<string, Copy>();
  #copyBytes = 0;
  #seq = 0;
  #counters = { localTakes: 0, remoteTakes: 0, lostTakes: 0 };

  private constructor(
    private readonly settings: EcStoreSettings,
    private readonly redis: EcRedis | null,
    private readonly post: (msg: StageToMain) => void,
    private readonly log: Logger,
  ) {}

  static async open(
    settings: EcStoreSettings,
    instance: string,
    post: (msg: StageToMain) => void,
    log: Logger,
  ): Promise<ThinkerEc> {
    const redis = settings.redis
      ? await EcRedis.open({ ...settings.redis, name: `${instance}-ec` }, (err) =>
          log.debug({ err: String(err) }, 'EC store Redis link error'),
        )
      : null;
    return new ThinkerEc(settings, redis, post, log);
  }

  /** Forgets the copies main's index let go (a copy kept again since the drop was decided stays). */
  drop(drops: readonly EcDrop[]): void {
    for (const d of drops) {
      const copy = this.#copies.get(d.contentKey);
      if (!copy || copy.seq > d.seq) continue;
      this.#copies.delete(d.contentKey);
      this.#copyBytes -= copy.rows.byteLength;
    }
  }

  /**
   * Takes the rows of every item main found in the store: this process's copy, else Redis. `onRows` gets each
   * item's rows, or the reason they cannot come, and where they came from (EcTakeSource); always after the call
   * returns (the request is registered by then).
   */
  takeHits(
    requestId: string,
    media: ThinkerMedia,
    onRows: (item: number, rows: Float32Array | SerializedError, source: EcTakeSource) => void,
  ): void {
    media.items.forEach((it, item) => {
      const ec = it.ec;
      if (ec?.contentKey === undefined) return;
      this.take(requestId, ec, ec.contentKey, it.what).then(
        (taken) => onRows(item, taken.rows, taken.source),
        (err: unknown) => onRows(item, serializeError(err), 'failed'),
      );
    });
  }

  private async take(
    requestId: string,
    ec: EcItemPlan,
    contentKey: string,
    what: string,
  ): Promise<{ rows: Float32Array | SerializedError; source: EcTakeSource }> {
    const copy = this.#copies.get(contentKey);
    if (copy) {
      this.#counters.localTakes++;
      return { rows: copy.rows, source: 'local' };
    }
    const rows = this.redis && ec.namespace !== undefined ? await this.redis.get(ec.namespace, contentKey) : null;
    if (rows) {
      this.#counters.remoteTakes++;
      // A copy here too: the next request with this media on this instance needs no I/O.
      const seq = this.#keepCopy(contentKey, rows);
      const itemKey = ec.itemKey;
      this.post({ type: 'ec_stored', requestId, itemKey, contentKey, bytes: rows.byteLength, seq, remote: true });
      return { rows, source: 'redis' };
    }
    this.#counters.lostTakes++;
    return {
      rows: {
        code: ErrorCodes.EC_ENTRY_LOST,
        message:
          `${what}: the encoder-output store no longer has its rows ` +
          `(${this.redis ? 'not in Redis' : 'no copy here'}); retry the request (it will be encoded again)`,
      },
      source: 'lost',
    };
  }

  /** Keeps the rows an encoder sent for an item (its plan `ec`), in Redis too, then tells main. */
  keep(requestId: string, ec: EcItemPlan, contentKey: string, rows: Float32Array): void {
    const { itemKey, namespace } = ec;
    const seq = this.#keepCopy(contentKey, rows);
    const stored = (remote: boolean) =>
      this.post({ type: 'ec_stored', requestId, itemKey, contentKey, bytes: rows.byteLength, seq, remote });
    if (!this.redis || namespace === undefined) return stored(false);
    this.redis.set(namespace, contentKey, rows, this.settings.ttlMs).then(
      () => stored(true),
      (err: unknown) => {
        // Still usable here: main indexes it as this instance's copy only.
        this.log.warn({ requestId, err: String(err) }, 'EC store: writing rows to Redis failed; kept in-process only');
        stored(false);
      },
    );
  }

  #keepCopy(contentKey: string, rows: Float32Array): number {
    const seq = ++this.#seq;
    const before = this.#copies.get(contentKey);
    if (before) this.#copyBytes -= before.rows.byteLength;
    this.#copies.set(contentKey, { rows, seq });
    this.#copyBytes += rows.byteLength;
    this.#capCopies();
    return seq;
  }

  /**
   * A safety net, not the policy: main's drops keep the copies within the store's budget. Copies main never heard
   * of (its `ec_stored` was lost with a restart of main's view) could pile up; past twice the budget the oldest go.
   */
  #capCopies(): void {
    for (const [key, copy] of this.#copies) {
      if (this.#copyBytes <= 2 * this.settings.budgetBytes) return;
      this.#copies.delete(key);
      this.#copyBytes -= copy.rows.byteLength;
    }
  }

  get stats(): ThinkerEcStats {
    return { ...this.#counters, copies: this.#copies.size, copyBytes: this.#copyBytes };
  }

  async close(): Promise<void> {
    await this.redis?.close();
  }
}
