/**
 * The encoded media rows a Thinker instance holds, budgeted in main (issue 44 item 6): a request's items cost
 * numEmbeddings x the Thinker's width x 4 bytes (float32 rows), charged to its Thinker instance when it is admitted
 * (the encode is planned) and released when it ends, or earlier in part when the Thinker lets an item's rows go once
 * its spans are prefilled (`media_released`: the request's PositionRows keep those positions' inputs), so what is
 * counted covers the rows from plan to drop. The budget is `engine.media_rows_bytes` of the Thinker stage.
 *
 * A request whose rows alone exceed the budget is refused (CHORUS_ERR_MEDIA_ROWS_BUDGET, naming the fix: fewer
 * frames, a lower fps, or a larger budget); one that fits the budget but not what is held now waits for room
 * (RowsWait, an OVERLOADED the pending admissions hold and retry on each release), up to chunk_timeout_ms. Never an
 * out-of-memory: rows beyond the budget are never planned. /metrics: chorus_media_rows_held_bytes (per Thinker
 * instance), chorus_media_rows_waits_total, chorus_media_rows_refusals_total.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { diagnostics } from '../common/diagnostics.ts';
import type { StageGraph } from '../common/graph.ts';
import type { PreparedPrompt } from './mediaPrompt.ts';

/** engine.media_rows_bytes when the Thinker stage does not set it. */
export const DEFAULT_MEDIA_ROWS_BYTES = 512 * 1024 * 1024;

/** Not refused, not admitted yet: the rows fit the budget once others are released. */
export class RowsWait extends ChorusError {
  constructor(
    readonly bytes: number,
    readonly budgetBytes: number,
  ) {
    super(
      ErrorCodes.OVERLOADED,
      `the request's media rows (${bytes} bytes) do not fit beside the rows the Thinker holds now ` +
        `(engine.media_rows_bytes ${budgetBytes})`,
    );
  }
}

export class MediaRowsBudget {
  /** Thinker instance -> bytes charged to it. */
  readonly #held = new Map<string, number>();
  /** Request (run) id -> its charge. */
  readonly #charges = new Map<string, { readonly instance: string; readonly bytes: number }>();

  constructor(
    /** The budget per Thinker instance; null: none (rows are counted, never refused). */
    readonly budgetBytes: number | null,
    /** Bytes of one row: the Thinker's hidden size x 4. */
    readonly rowBytes: number,
  ) {}

  /** The rows a prompt's items take in the Thinker. */
  bytesOf(prompt: PreparedPrompt): number {
    return prompt.items.reduce((n, item) => n + item.numEmbeddings, 0) * this.rowBytes;
  }

  /** What limit the prompt's rows alone pass (for the clips' fallback, fitPrompt.ts), or null when they fit. */
  overBudget(prompt: PreparedPrompt): string | null {
    const budget = this.budgetBytes;
    if (budget === null || this.bytesOf(prompt) <= budget) return null;
    return `the Thinker's budget for media rows (engine.media_rows_bytes: ${budget} bytes)`;
  }

  /**
   * Before planning: throws CHORUS_ERR_MEDIA_ROWS_BUDGET when the rows alone exceed the budget, RowsWait when no
   * Thinker instance (of `instances`; none known yet: any) has room for them now.
   */
  check(prompt: PreparedPrompt, instances: readonly string[]): void {
    const bytes = this.bytesOf(prompt);
    const budget = this.budgetBytes;
    if (bytes === 0 || budget === null) return;
    if (bytes > budget) {
      diagnostics.mediaRows.publish({ event: 'refused' });
      const what = prompt.items.map((i) => `${i.what} ${i.numEmbeddings} rows`).join(', ');
      throw new ChorusError(
        ErrorCodes.MEDIA_ROWS_BUDGET,
        `the request's media take ${bytes} bytes of encoded rows (${what}); a Thinker holds at most ${budget} ` +
          '(engine.media_rows_bytes): send fewer or shorter clips, a lower fps or max_frames (mm_processor_kwargs), ' +
          'or raise the budget',
      );
    }
    const room = instances.length === 0 || instances.some((i) => (this.#held.get(i) ?? 0) + bytes <= budget);
    if (!room) throw new RowsWait(bytes, budget);
  }

  /** The request was admitted on `instance`: its rows count there until release(). */
  charge(requestId: string, instance: string, prompt: PreparedPrompt): void {
    const bytes = this.bytesOf(prompt);
    if (bytes === 0) return;
    this.#charges.set(requestId, { instance, bytes });
    this.#set(instance, (this.#held.get(instance) ?? 0) + bytes);
  }

  /** The request ended: its rows are gone everywhere. True when that made room. */
  release(requestId: string): boolean {
    const charge = this.#charges.get(requestId);
    if (!charge) return false;
    this.#charges.delete(requestId);
    this.#set(charge.instance, (this.#held.get(charge.instance) ?? 0) - charge.bytes);
    return true;
  }

  /** Part of a request's rows is gone (the Thinker let them go once prefilled). True when that made room. */
  releasePart(requestId: string, bytes: number): boolean {
    const charge = this.#charges.get(requestId);
    if (!charge || bytes <= 0) return false;
    const freed = Math.min(bytes, charge.bytes);
    this.#charges.set(requestId, { instance: charge.instance, bytes: charge.bytes - freed });
    this.#set(charge.instance, (this.#held.get(charge.instance) ?? 0) - freed);
    return freed > 0;
  }

  heldBytes(instance: string): number {
    return this.#held.get(instance) ?? 0;
  }

  #set(instance: string, bytes: number): void {
    if (bytes > 0) this.#held.set(instance, bytes);
    else this.#held.delete(instance);
    diagnostics.mediaRows.publish({ event: 'held', instance, bytes: Math.max(0, bytes) });
  }
}

/**
 * The budget of a graph's Thinker (its entry stage). A row is its hidden size x 4 bytes: a generated model's size,
 * else 4096 (a file model's width is known only once it loads; 4096 over-counts the models Chorus runs today).
 */
export function mediaRowsBudgetOf(graph: StageGraph): MediaRowsBudget {
  const thinker = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
  const m = thinker.model;
  const hidden = m.source === 'generated' && m.kind === 'thinker' ? m.size.hiddenSize : 4096;
  return new MediaRowsBudget(thinker.engine.mediaRowsBytes ?? DEFAULT_MEDIA_ROWS_BYTES, hidden * 4);
}
