/**
 * Placeholders -> positions. A prompt holds one placeholder token per media item (<|image|>, <|audio|>);
 * each expands to that item's embedding count, known before encoding (audioEmbeddingCount,
 * imageEmbeddingCount). The position map says where each item's rows go in the expanded sequence, so:
 * - the Thinker's inputs_embeds are the text embeddings of the expanded ids with each span overwritten by
 *   the item's rows (spliceEmbeddings, or spliceRange for one prefill chunk);
 * - the scheduler can prefill text while encoders run, stopping at readyLimit(): the start of the first
 *   span whose rows have not arrived.
 * Expanded placeholder positions keep the placeholder's id, so embedding the expanded ids is valid
 * everywhere and any code that only sees token ids still knows those positions are media.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import type { Modality } from './types.ts';

export interface MediaItemLayout {
  readonly modality: Modality;
  readonly numEmbeddings: number;
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
    spans.push({ item, modality, placeholderIndex: index, start: expanded.length, length: layout.numEmbeddings });
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
