/**
 * Builds the Talker's input from Thinker steps. One conditioning row per position: [input embedding | accept-layer
 * hidden state], conditionDim = 2 * hidden. Prompt positions give one row each; every sampled token gives a row of
 * [its embedding | the hidden state of the position that sampled it], so a token's row exists as soon as it is
 * sampled (waiting for its own forward pass would delay the Talker by one Thinker step).
 *
 * Rows go as they are computed: the first chunk carries the prompt rows computed so far (payload.promptRows says how
 * many the prompt has; a prefill in pieces sends the rest with the next ones, and the Talker prefills each piece as
 * it comes), and each sampled token's row follows. With async_chunk off, rows accumulate and go out once, in the
 * final chunk: the same chunks, only fewer of them.
 */
import type { TalkerRowsBody } from '../../src/common/payloads.ts';

export class Thinker2Talker {
  private pending: Float32Array[] = [];
  private pendingRows = 0;
  private promptRowsSent = 0;
  private sentFirst = false;

  constructor(
    private readonly hiddenSize: number,
    private promptLength: number,
    private readonly asyncChunk: boolean,
  ) {}

  /**
   * The prompt lost positions that were never computed (a media item dropped before its span was prefilled,
   * on_encoder_failure: text_only). Rows already pushed are for earlier positions and stay valid.
   */
  shrinkPrompt(promptLength: number): void {
    if (promptLength < this.promptRowsSent || promptLength > this.promptLength) {
      throw new RangeError(
        `prompt can shrink only past the rows already taken (${this.promptRowsSent}..${this.promptLength}), got ` +
          `${promptLength}`,
      );
    }
    this.promptLength = promptLength;
  }

  get conditionDim(): number {
    return 2 * this.hiddenSize;
  }

  /**
   * Records one step of this request. `startPosition`/`numTokens` are the positions computed; `embeds`/`hidden`
   * their rows; `sampled` the token embedding of a sampled token (null when the step did not sample).
   */
  onStep(
    startPosition: number,
    numTokens: number,
    embeds: Float32Array,
    hidden: Float32Array,
    sampledEmbed: Float32Array | null,
  ): void {
    const d = this.hiddenSize;
    // Prompt rows not sent yet (a recompute after preemption revisits positions already sent: skip those), and the
    // sampled token's row after them, in one block: a cached prefix hands over thousands of positions at once, and a
    // step's rows go to the Talker as this block (take).
    const first = Math.max(startPosition, this.promptRowsSent);
    const end = Math.min(startPosition + numTokens, this.promptLength);
    const promptRows = Math.max(0, end - first);
    const rows = promptRows + (sampledEmbed ? 1 : 0);
    if (rows === 0) return;
    const block = new Float32Array(rows * this.conditionDim);
    for (let pos = first; pos < end; pos++) {
      const i = pos - startPosition;
      const at = (pos - first) * this.conditionDim;
      block.set(embeds.subarray(i * d, (i + 1) * d), at);
      block.set(hidden.subarray(i * d, (i + 1) * d), at + d);
    }
    if (sampledEmbed) {
      const last = numTokens - 1;
      block.set(sampledEmbed, promptRows * this.conditionDim);
      block.set(hidden.subarray(last * d, (last + 1) * d), promptRows * this.conditionDim + d);
    }
    this.pending.push(block);
    this.pendingRows += rows;
    if (promptRows > 0) this.promptRowsSent = end;
  }

  /**
   * Positions [0, n) came from the Thinker's prefix cache with their conditioning rows ([embedding | hidden] each,
   * one after another): they go to the Talker as they are, a view and not a copy (a conversation's cached prefix is
   * its whole history). The rows must not change until their chunk is written to its edge (take() hands a lone block
   * over as it is, and a full ring holds the frame a while): PositionRows only rewrites a position with the values it
   * held, and a grown buffer leaves the old one to the view.
   */
  onCachedPrompt(n: number, rows: Float32Array): void {
    const end = Math.min(n, this.promptLength);
    if (end <= this.promptRowsSent) return;
    this.pending.push(rows.subarray(this.promptRowsSent * this.conditionDim, end * this.conditionDim));
    this.pendingRows += end - this.promptRowsSent;
    this.promptRowsSent = end;
  }

  /** Rows ready to send now, or null. On `final` everything pending goes (possibly zero rows). */
  take(final: boolean): { rows: Float32Array; numRows: number; promptRows?: number } | null {
    if (!final) {
      if (!this.asyncChunk) return null; // sync: one final chunk only
      if (this.pendingRows === 0) return null;
    }
    const rows = this.pending.length === 1 ? this.pending[0] : this.joined();
    const out = { rows, numRows: this.pendingRows, ...(this.sentFirst ? {} : { promptRows: this.promptLength }) };
    this.sentFirst = true;
    this.pending = [];
    this.pendingRows = 0;
    return out;
  }

  /**
   * The Talker's chunk of the rows ready now (take), or undefined when there are none; the first names the prompt's
   * blocks when `names` gives them (a Thinker that keeps a prefix cache).
   */
  takeChunk(final: boolean, names?: () => TalkerRowsBody['promptBlocks']): TalkerRowsBody | undefined {
    const rows = this.take(final);
    if (!rows || rows.numRows === 0) return undefined;
    const first = rows.promptRows !== undefined;
    const blocks = first ? names?.() : undefined;
    return {
      kind: 'talkerRows',
      rows: rows.rows,
      numRows: rows.numRows,
      conditionDim: rows.rows.length / rows.numRows,
      ...(first ? { promptRows: rows.promptRows } : {}),
      ...(blocks ? { promptBlocks: blocks } : {}),
    };
  }

  /** The pending blocks in one array (one block alone goes as it is: a prompt piece's rows are not copied again). */
  private joined(): Float32Array {
    const rows = new Float32Array(this.pendingRows * this.conditionDim);
    let at = 0;
    for (const r of this.pending) {
      rows.set(r, at);
      at += r.length;
    }
    return rows;
  }
}
