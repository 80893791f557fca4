/**
 * Placeholders -> positions. A prompt holds one placeholder token per media item (<|image|>, <|audio|>, <|video|>);
 * each expands to that item's embedding count, known before encoding (each modality's `layout`,
 * src/media/modalities); a video's span also carries its time x height x width grid (mropePositions). The position
 * map says where each item's rows go in the expanded sequence, so:
 * - the Thinker's inputs_embeds are the text embeddings of the expanded ids with each span overwritten by
 *   the item's rows (spliceEmbeddings, or spliceRange for one prefill chunk);
 * - the scheduler can prefill text while encoders run, stopping at readyLimit(): the start of the first
 *   span whose rows have not arrived.
 * Expanded placeholder positions keep the placeholder's id, so embedding the expanded ids is valid
 * everywhere and any code that only sees token ids still knows those positions are media.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { MediaGrid, Modality } from '../common/modality.ts';

export interface MediaItemLayout {
  readonly modality: Modality;
  readonly numEmbeddings: number;
  /** A video's time x height x width grid (numEmbeddings = t * h * w), carried into its span. */
  readonly grid?: MediaGrid;
}

export interface MediaSpan {
  /** Index of the media item (in request order). */
  readonly item: number;
  readonly modality: Modality;
  /** Index of its placeholder in the original token ids. */
  readonly placeholderIndex: number;
  /** First position in the expanded sequence, and the number of rows there. */
  readonly start: number;
  readonly length: number;
  /** A video's grid: its rows are in time-major, then row, then column order over it. */
  readonly grid?: MediaGrid;
}

export interface PositionMap {
  /** The prompt with each placeholder repeated numEmbeddings times. */
  readonly tokenIds: readonly number[];
  readonly spans: readonly MediaSpan[];
  readonly length: number;
}

/**
 * placeholders maps each placeholder token id to the modality it stands for; items are in prompt order
 * (the i-th placeholder is the i-th item).
 */
export function buildPositionMap(
  tokenIds: readonly number[],
  placeholders: ReadonlyMap<number, Modality>,
  items: readonly MediaItemLayout[],
): PositionMap {
  const expanded: number[] = [];
  const spans: MediaSpan[] = [];
  tokenIds.forEach((id, index) => {
    const modality = placeholders.get(id);
    if (modality === undefined) {
      expanded.push(id);
      return;
    }
    const item = spans.length;
    const layout = items[item];
    if (!layout) throw invalid(`the prompt has more media placeholders than media items (${items.length})`);
    if (layout.modality !== modality)
      throw invalid(
        `placeholder ${item} (token ${index}) stands for ${modality} but media item ${item} is ${layout.modality}`,
      );
    if (!(Number.isInteger(layout.numEmbeddings) && layout.numEmbeddings >= 1))
      throw invalid(`media item ${item} has ${layout.numEmbeddings} embeddings`);
    if (layout.grid && layout.grid.t * layout.grid.h * layout.grid.w !== layout.numEmbeddings)
      throw invalid(`media item ${item}'s grid is not its ${layout.numEmbeddings} embeddings`);
    const grid = layout.grid ? { grid: layout.grid } : {};
    spans.push({
      item,
      modality,
      placeholderIndex: index,
      start: expanded.length,
      length: layout.numEmbeddings,
      ...grid,
    });
    for (let i = 0; i < layout.numEmbeddings; i++) expanded.push(id);
  });
  if (spans.length !== items.length)
    throw invalid(`the prompt has ${spans.length} media placeholders for ${items.length} media items`);
  return { tokenIds: expanded, spans, length: expanded.length };
}

function invalid(message: string): ChorusError {
  return new ChorusError(ErrorCodes.REQUEST_INVALID, `${message}; put one placeholder per media item, in order`);
}

/**
 * The first position >= from that cannot be prefilled yet: the start of the first span from there on
 * whose rows are not ready (ready[item]). map.length when everything from `from` on can run.
 */
export function readyLimit(map: PositionMap, ready: readonly boolean[], from = 0): number {
  for (const span of map.spans) {
    if (span.start + span.length <= from) continue;
    if (!ready[span.item]) return Math.max(from, span.start);
  }
  return map.length;
}

/**
 * inputs_embeds for positions [start, end): textEmbeds holds the rows of the expanded ids over that same
 * range ((end - start) * hiddenSize); each overlapping span's rows are copied over them. itemEmbeds[i] is
 * item i's rows (numEmbeddings * hiddenSize), or null when not ready (then no span may overlap the range).
 */
export function spliceRange(
  map: PositionMap,
  start: number,
  end: number,
  textEmbeds: Float32Array,
  itemEmbeds: readonly (Float32Array | null)[],
  hiddenSize: number,
): Float32Array {
  if (!(start >= 0 && start <= end && end <= map.length))
    throw new RangeError(`splice range [${start}, ${end}) outside [0, ${map.length})`);
  if (textEmbeds.length !== (end - start) * hiddenSize) {
    throw new RangeError(`${textEmbeds.length} text values for ${end - start} positions of ${hiddenSize}`);
  }
  const out = textEmbeds.slice();
  for (const span of map.spans) {
    const from = Math.max(start, span.start);
    const to = Math.min(end, span.start + span.length);
    if (from >= to) continue;
    const rows = itemEmbeds[span.item];
    if (!rows)
      throw new ChorusError(
        ErrorCodes.INTERNAL,
        `media item ${span.item} is not encoded yet but positions ${from}..${to - 1} were scheduled; clamp at ` +
          `readyLimit()`,
      );
    if (rows.length !== span.length * hiddenSize) {
      throw new ChorusError(
        ErrorCodes.INTERNAL,
        `media item ${span.item} has ${rows.length / hiddenSize} rows of ${hiddenSize}; its placeholder expanded ` +
          `to ${span.length}`,
      );
    }
    out.set(
      rows.subarray((from - span.start) * hiddenSize, (to - span.start) * hiddenSize),
      (from - start) * hiddenSize,
    );
  }
  return out;
}

/** The whole merged inputs_embeds: text rows of map.tokenIds with every media span spliced in. */
export function spliceEmbeddings(
  map: PositionMap,
  textEmbeds: Float32Array,
  itemEmbeds: readonly Float32Array[],
  hiddenSize: number,
): Float32Array {
  return spliceRange(map, 0, map.length, textEmbeds, itemEmbeds, hiddenSize);
}

/**
 * Multimodal rotary positions (Qwen2-VL's M-RoPE), [temporal, height, width] per position: text advances all three
 * together; a video span's rows take (start + t * secondsPerGroup-scaled time, start + row, start + col) over its grid,
 * an image span (t = 0) its row and column; the text after a span resumes from the largest position used plus one.
 * `timeScale` is rotary time steps per temporal group (Qwen2.5-VL: tokens_per_second * temporal_patch / fps), so two
 * clips sampled at different rates keep the same time axis. The generated Thinker uses 1D positions (the expanded
 * index); this is the layout a model with M-RoPE reads, and what the grid in each span is for.
 */
export function mropePositions(
  map: PositionMap,
  imageGrids: ReadonlyMap<number, MediaGrid> = new Map(),
  timeScale: (span: MediaSpan) => number = () => 1,
): Int32Array {
  const out = new Int32Array(map.length * 3);
  let next = 0; // the next text position
  let at = 0;
  const put = (t: number, h: number, w: number): void => {
    out.set([t, h, w], 3 * at);
    at++;
  };
  const text = (until: number): void => {
    for (; at < until; next++) put(next, next, next);
  };
  for (const span of map.spans) {
    text(span.start);
    const grid = span.grid ?? imageGrids.get(span.item);
    if (!grid) {
      text(span.start + span.length);
      continue;
    }
    const scale = span.grid ? timeScale(span) : 0;
    let top = next;
    for (let t = 0; t < grid.t; t++) {
      const time = next + Math.round(t * scale);
      for (let r = 0; r < grid.h; r++) {
        for (let c = 0; c < grid.w; c++) put(time, next + r, next + c);
      }
      top = Math.max(top, time, next + grid.h - 1, next + grid.w - 1);
    }
    next = top + 1;
  }
  text(map.length);
  return out;
}
