/**
 * The Thinker's two rows per position (its input embedding and hidden state at each position it computed), kept so a
 * cached prefix can hand a Talker the rows of positions nobody computes again. Stored as the Talker takes them: one
 * conditioning row [embedding | hidden] per position, so handing over a prefix of thousands of positions is one view,
 * not a copy per position. Grows by a quarter; a position written twice (a recompute after preemption) is overwritten
 * with the same values.
 */
export class PositionRows {
  #rows: Float32Array;
  /** Positions [0, length) are written. */
  length = 0;

  constructor(
    /** The hidden size: a row is twice as wide. */
    readonly width: number,
    initialPositions = 64,
  ) {
    this.#rows = new Float32Array(Math.max(1, initialPositions) * 2 * width);
  }

  /** Writes positions [start, start + count) from embeddings and hidden states laid out one after another. */
  set(start: number, count: number, embeds: Float32Array, hidden: Float32Array): void {
    const d = this.width;
    this.#reserve(start + count);
    for (let i = 0; i < count; i++) {
      const at = (start + i) * 2 * d;
      this.#rows.set(embeds.subarray(i * d, (i + 1) * d), at);
      this.#rows.set(hidden.subarray(i * d, (i + 1) * d), at + d);
    }
    this.length = Math.max(this.length, start + count);
  }

  /** Writes positions [start, start + count) from conditioning rows (another PositionRows' view). */
  setRows(start: number, count: number, rows: Float32Array): void {
    this.#reserve(start + count);
    this.#rows.set(rows.subarray(0, count * 2 * this.width), start * 2 * this.width);
    this.length = Math.max(this.length, start + count);
  }

  /** The conditioning rows of positions [0, count), one after another: a view, valid until the next write. */
  rows(count: number): Float32Array {
    return this.#rows.subarray(0, count * 2 * this.width);
  }

  /** Forgets positions from `count` on (their memory stays, for the positions written next). */
  truncate(count: number): void {
    this.length = Math.min(this.length, count);
  }

  get bytes(): number {
    return this.#rows.byteLength | 0;
  }

  #reserve(positions: number): void {
    const floats = positions * 2 * this.width;
    if (floats <= this.#rows.length) return;
    // By a quarter, not double: a conversation's rows grow by a turn's positions at a time, and its entry in the
    // cache holds (and counts) the whole buffer; a quarter still keeps the copies linear in the positions written.
    const grown = new Float32Array(Math.max(floats, Math.ceil(1.25 * this.#rows.length)));
    grown.set(this.#rows.subarray(0, this.length * 2 * this.width));
    this.#rows = grown;
  }
}
