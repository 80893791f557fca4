/**
 * The Thinker's view of one request's media: the position map (where each item's rows go in the expanded
 * prompt), the rows that have arrived, and the items given up on. Pure bookkeeping, no I/O:
 *
 * - readyLimit(): the first position that cannot be prefilled yet (the first position of a span whose row is
 *   missing); the core makes it the scheduler's numAvailableTokens, so text before an item prefills while it
 *   encodes and the request waits (WAITING_FOR_CHUNK) at the item's boundary until its rows come. A clip's rows may
 *   come in pieces, in order (its groups encoded apart, each sent as soon as it is done): the request prefills each
 *   piece as it arrives and waits at the first row still missing.
 * - embeds(): inputs_embeds for a step, text rows with the overlapping spans' rows spliced over them.
 * - drop(): with on_encoder_failure text_only, an item that will not come is cut out of the prompt. Nothing at
 *   or after its span has been computed (the scheduler never passes readyLimit), so the positions after it just
 *   shift down; the prompt array given to the constructor is edited in place. An item some of whose pieces were
 *   prefilled cannot be cut out (partlyPrefilled): its failure fails the request.
 *
 * - releasePrefilled(): an item's rows are let go once its spans are prefilled, where the request keeps each computed
 *   position's input row anyway (its PositionRows, for the prefix cache and the Talker: recoverFrom()). A recompute
 *   (a preempted request starts again from position 0) and the prefix cache's names read a released item's rows
 *   there, the same floats, so nothing is lost and nothing waits; without that store the rows stay to the end.
 */
import { readyLimit, spliceRange, type MediaSpan, type PositionMap } from '../../src/media/positionMap.ts';
import { KV_HELD, type ThinkerMediaItem, type ThinkerMediaPlan } from '../../src/worker/messages.ts';

type ItemState = 'waiting' | 'ready' | 'dropped' | 'released';

/** Where a request keeps each computed position's input row ([embedding | hidden] per position): its PositionRows. */
export interface StoredRows {
  readonly width: number;
  readonly length: number;
  rows(count: number): Float32Array;
}

export class ThinkerMedia {
  private spans: MediaSpan[];
  private readonly rows: (Float32Array | null)[];
  /** A waiting item's rows in so far (its first rows: pieces come in order); its whole count once ready. */
  private readonly arrived: number[];
  private readonly state: ItemState[];
  readonly warnings: string[] = [];
  /** Items cut out of the prompt (drop()), in the order they were dropped. */
  readonly dropped: number[] = [];
  /** The request's store of computed positions' input rows (null: none, rows are kept to the end). */
  private stored: () => StoredRows | null = () => null;

  constructor(
    private readonly plan: ThinkerMediaPlan,
    /** The expanded prompt; edited in place by drop(). */
    private readonly prompt: number[],
    private readonly hiddenSize: number,
  ) {
    this.spans = plan.spans.map((s) => ({ ...s }));
    this.rows = plan.items.map(() => null);
    this.arrived = plan.items.map(() => 0);
    this.state = plan.items.map(() => 'waiting');
    const laid = plan.items.map(() => 0);
    for (const span of this.spans) {
      const item = plan.items[span.item];
      const offset = span.offset ?? 0;
      if (!item || offset + span.length > item.numEmbeddings || span.start + span.length > prompt.length) {
        throw new RangeError(
          `media span of item ${span.item} does not fit the plan (${span.start}+${span.length} in a prompt of ` +
            `${prompt.length})`,
        );
      }
      laid[span.item] += span.length;
    }
    const short = laid.findIndex((n, i) => n !== plan.items[i].numEmbeddings);
    if (short >= 0)
      throw new RangeError(
        `media item ${short}'s spans hold ${laid[short]} of its ${plan.items[short].numEmbeddings} rows`,
      );
  }

  get items(): readonly ThinkerMediaItem[] {
    return this.plan.items;
  }

  private get map(): PositionMap {
    return { tokenIds: this.prompt, spans: this.spans, length: this.prompt.length };
  }

  /** Released rows are read back from `stored` (the request's PositionRows), which must outlive their release. */
  recoverFrom(stored: () => StoredRows | null): void {
    this.stored = stored;
  }

  /**
   * Lets go of the rows of every item whose spans all lie before `computed` and are in the request's store: they are
   * read back from there when needed again. Returns the bytes let go (0 without a store).
   */
  releasePrefilled(computed: number): number {
    const stored = this.stored();
    if (!stored || stored.width !== this.hiddenSize) return 0;
    const upTo = Math.min(computed, stored.length);
    let bytes = 0;
    this.state.forEach((state, item) => {
      if (state !== 'ready') return;
      if (this.spans.some((s) => s.item === item && s.start + s.length > upTo)) return;
      bytes += this.rows[item]!.byteLength;
      this.rows[item] = null;
      this.state[item] = 'released';
    });
    return bytes;
  }

  /** True once every item has its rows or was dropped: the whole prompt can prefill. */
  get complete(): boolean {
    return this.state.every((s) => s !== 'waiting');
  }

  isWaiting(item: number): boolean {
    return this.state[item] === 'waiting';
  }

  /** Items whose encoding main was asked to mend (ThinkerCore.mediaItemFailed). */
  readonly #retryAsked = new Set<number>();

  /** True the first time an item's retry is asked (it is asked of main once per run). */
  askRetry(item: number): boolean {
    if (this.#retryAsked.has(item)) return false;
    this.#retryAsked.add(item);
    return true;
  }

  /** Items still waiting whose rows come from this encoder (by stage id or instance). */
  waitingFrom(from: string): number[] {
    return this.plan.items.flatMap((it, i) =>
      (it.from.stageId === from || it.from.instance === from) && this.state[i] === 'waiting' ? [i] : [],
    );
  }

  /**
   * Items main sent to no encoder (from KV_HELD: the prefix cache was to give their positions' KV) still waiting with
   * a span at or past `computed`: the cache did not give them, and no rows will come unless asked for.
   */
  heldNotAdopted(computed: number): number[] {
    return this.plan.items.flatMap((it, i) =>
      it.from.stageId === KV_HELD &&
      this.state[i] === 'waiting' &&
      this.spans.some((s) => s.item === i && s.start + s.length > computed)
        ? [i]
        : [],
    );
  }

  /**
   * Items main sent to no encoder whose spans all lie before `computed` (the cache gave them) and whose input rows
   * the request's store holds (adopted with the KV): released, as if prefilled here, so that a recompute from 0 (a
   * preemption) reads their rows back from the store instead of waiting for rows that will never come.
   */
  releaseHeld(computed: number): void {
    const stored = this.stored();
    if (!stored || stored.width !== this.hiddenSize) return;
    const upTo = Math.min(computed, stored.length);
    this.plan.items.forEach((it, i) => {
      if (it.from.stageId !== KV_HELD || this.state[i] !== 'waiting') return;
      if (this.spans.some((s) => s.item === i && s.start + s.length > upTo)) return;
      this.state[i] = 'released';
    });
  }

  /** The first position >= from that cannot be prefilled yet (prompt length when nothing blocks). */
  readyLimit(from: number): number {
    return readyLimit(
      this.map,
      this.state.map((s, i) => s !== 'waiting' || this.arrived[i]),
      from,
    );
  }

  /**
   * Rows for an item, all of them or a piece (`offset`: its first row; pieces come in order), checked against what
   * was promised; returns a problem, or null when they were taken. The item is ready once its last row is in.
   */
  setRows(
    item: number,
    fromStageId: string,
    rows: { rows: Float32Array; numRows: number; width: number; offset?: number },
  ): string | null {
    const it = this.plan.items[item];
    if (!it) return `rows for media item ${item}, which this request does not have`;
    if (it.from.stageId !== fromStageId)
      return `rows for ${it.what} came from ${fromStageId}, expected ${it.from.stageId}`;
    if (this.state[item] !== 'waiting')
      return this.state[item] === 'ready' ? `rows for ${it.what} arrived twice` : null; // dropped: late, ignore
    const offset = rows.offset ?? 0;
    const end = offset + rows.numRows;
    if (offset !== this.arrived[item] || rows.numRows < 1 || end > it.numEmbeddings || rows.width !== this.hiddenSize) {
      return (
        `rows for ${it.what} are [${rows.numRows}, ${rows.width}] from its row ${offset}, expected the next of ` +
        `[${it.numEmbeddings}, ${this.hiddenSize}] float32 from row ${this.arrived[item]}`
      );
    }
    // Copy: the frame buffer belongs to the receive path; rows live as long as the request.
    if (offset === 0 && end === it.numEmbeddings) this.rows[item] = new Float32Array(rows.rows);
    else
      (this.rows[item] ??= new Float32Array(it.numEmbeddings * this.hiddenSize)).set(
        rows.rows,
        offset * this.hiddenSize,
      );
    this.arrived[item] = end;
    if (end === it.numEmbeddings) this.state[item] = 'ready';
    return null;
  }

  /** An item's rows once all arrived (null before, when it was dropped, or once released). */
  rowsOf(item: number): Float32Array | null {
    return this.state[item] === 'ready' ? this.rows[item] : null;
  }

  /** Whether an item still waiting has positions computed before `computed` (pieces of it were prefilled). */
  partlyPrefilled(item: number, computed: number): boolean {
    return (
      this.state[item] === 'waiting' &&
      this.arrived[item] > 0 &&
      this.spans.some((s) => s.item === item && s.start < computed)
    );
  }

  /** Cuts a waiting item out of the prompt (each of its spans); returns the new prompt length. */
  drop(item: number, reason: string): number {
    if (this.state[item] !== 'waiting') return this.prompt.length;
    // Last span first: cutting one moves only what follows it.
    for (const span of this.spans.filter((s) => s.item === item).reverse()) {
      this.prompt.splice(span.start, span.length);
      this.spans = this.spans
        .filter((s) => s !== span)
        .map((s) => (s.start > span.start ? { ...s, start: s.start - span.length } : s));
    }
    this.state[item] = 'dropped';
    this.dropped.push(item);
    this.warnings.push(`${this.plan.items[item].what} was left out of the answer: ${reason}`);
    return this.prompt.length;
  }

  /** The row of prompt position p: undefined at a text position, null while its item's rows have not arrived. */
  rowAt(p: number): Float32Array | null | undefined {
    const span = this.spans.find((s) => p >= s.start && p < s.start + s.length);
    if (!span) return undefined;
    const d = this.hiddenSize;
    if (this.state[span.item] === 'released') {
      // The position's input row in the request's store: [embedding | hidden], the embedding first.
      const stored = this.stored()!;
      return stored.rows(p + 1).subarray(2 * d * p, 2 * d * p + d);
    }
    const rows = this.rows[span.item];
    const row = (span.offset ?? 0) + p - span.start;
    if (!rows || row >= this.arrived[span.item]) return null;
    return rows.subarray(row * d, (row + 1) * d);
  }

  /**
   * A keyed item's (a video's) block key and offset at prompt position p (ThinkerMediaItem.blockKey): the prefix
   * cache names that position by them, rows or not. undefined elsewhere.
   */
  blockKeyAt(p: number): { readonly key: string; readonly offset: number } | undefined {
    const span = this.spans.find((s) => p >= s.start && p < s.start + s.length);
    const key = span && this.plan.items[span.item].blockKey;
    // The offset is the row's index in its item (a clip heard with its track has several spans, the track its own key).
    return key === undefined ? undefined : { key, offset: (span!.offset ?? 0) + p - span!.start };
  }

  /** Whether positions [start, end) of the prompt touch a media span. */
  overlaps(start: number, end: number): boolean {
    return this.spans.some((s) => s.start < end && s.start + s.length > start);
  }

  /**
   * inputs_embeds for positions [start, end): textEmbeds are the embeddings of those positions' token ids (the
   * placeholder's own embedding on media positions); every overlapping span's rows replace them. Positions past
   * the prompt (generated tokens, when a preempted request recomputes) keep their text rows.
   */
  embeds(start: number, end: number, textEmbeds: Float32Array): Float32Array {
    const d = this.hiddenSize;
    const promptEnd = Math.min(end, this.prompt.length);
    if (start >= promptEnd) return textEmbeds;
    if (!this.state.includes('released')) {
      const head = spliceRange(
        this.map,
        start,
        promptEnd,
        textEmbeds.subarray(0, (promptEnd - start) * d),
        this.rows,
        d,
      );
      const out = textEmbeds.slice();
      out.set(head, 0);
      return out;
    }
    // Some rows were released (a recompute): each media position's row, from the item or the request's store.
    const out = textEmbeds.slice();
    for (let p = start; p < promptEnd; p++) {
      const row = this.rowAt(p);
      if (row === null)
        throw new RangeError(`media position ${p} was scheduled before its rows arrived; clamp at readyLimit()`);
      if (row) out.set(row, (p - start) * d);
    }
    return out;
  }
}
