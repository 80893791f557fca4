/**
 * Two rows per position (the Thinker's input embedding and hidden state at each position it computed), kept so a
 * cached prefix can hand a Talker the rows of positions nobody computes again. Grows by doubling; a position
 * written twice (a recompute after preemption) is overwritten with the same values.
 */
export class PositionRows {
  #embeds: Float32Array;
  #hidden: Float32Array;
  /** Positions [0, length) are written. */
  length = 0;

  constructor(
    readonly width: number,
    initialPositions = 64,
  ) {
    this.#embeds = new Float32Array(Math.max(1, initialPositions) * width);
    this.#hidden = new Float32Array(Math.max(1, initialPositions) * width);
  }

  /** Writes positions [start, start + count) from rows laid out one after another. */
  set(start: number, count: number, embeds: Float32Array, hidden: Float32Array): void {
    const end = (start + count) * this.width;
    if (end > this.#embeds.length) {
      const size = Math.max(end, 2 * this.#embeds.length);
      this.#embeds = grow(this.#embeds, size, this.length * this.width);
      this.#hidden = grow(this.#hidden, size, this.length * this.width);
    }
    this.#embeds.set(embeds.subarray(0, count * this.width), start * this.width);
    this.#hidden.set(hidden.subarray(0, count * this.width), start * this.width);
    this.length = Math.max(this.length, start + count);
  }

  /** Views of positions [0, count): valid until the next set(). */
  embeds(count: number): Float32Array {
    return this.#embeds.subarray(0, count * this.width);
  }

  hidden(count: number): Float32Array {
    return this.#hidden.subarray(0, count * this.width);
  }

  /** A copy of positions [0, count), exactly that large. */
  copyFirst(count: number): PositionRows {
    const copy = new PositionRows(this.width, count);
    copy.set(0, count, this.embeds(count), this.hidden(count));
    return copy;
  }

  get bytes(): number {
    return (this.#embeds.byteLength + this.#hidden.byteLength) | 0;
  }
}

function grow(old: Float32Array, floats: number, used: number): Float32Array {
  const grown = new Float32Array(floats);
  grown.set(old.subarray(0, used));
  return grown;
}
