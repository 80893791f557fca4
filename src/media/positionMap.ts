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
import { interleaveLayout, interleavedPositions, type InterleaveTiming } from './video/interleave.ts';

export interface MediaItemLayout {
  readonly modality: Modality;
  readonly numEmbeddings: number;
  /** A video's time x height x width grid (numEmbeddings = t * h * w), carried into its span. */
  readonly grid?: MediaGrid;
  /**
   * A video heard with its audio track: the next item is the track (its `trackOf` is this item), and the video's one
   * placeholder expands to both, interleaved in time chunks (src/media/video/interleave.ts).
   */
  readonly audioTrack?: { readonly secondsPerGroup: number; readonly timing: InterleaveTiming };
  /** The audio track of item `trackOf` (a video): it has no placeholder of its own. */
  readonly trackOf?: number;
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
  /**
   * The item's first row in this span (absent: 0). An item has one span, but a video heard with its audio track has
   * several, interleaved with the track's, all at its placeholder (placeholderIndex).
   */
  readonly offset?: number;
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
  let item = 0; // the next item: a placeholder takes one, or a video and its track
  let placeholderCount = 0;
  tokenIds.forEach((id, index) => {
    const modality = placeholders.get(id);
    if (modality === undefined) {
      expanded.push(id);
      return;
    }
    placeholderCount++;
    const layout = checkedLayout(items, item, modality, `placeholder ${placeholderCount - 1} (token ${index})`);
    const start = expanded.length;
    const heard = layout.audioTrack;
    const track = heard ? trackOf(items, item) : undefined;
    if (!heard || !track) {
      spans.push({ item, modality, placeholderIndex: index, start, length: layout.numEmbeddings, ...gridOf(layout) });
    } else {
      const segments = interleaveLayout(layout.grid!, heard.secondsPerGroup, track.numEmbeddings, heard.timing);
      let at = start;
      for (const s of segments) {
        const video = s.source === 'video';
        spans.push({
          item: video ? item : item + 1,
          modality: video ? modality : 'audio',
          placeholderIndex: index,
          start: at,
          length: s.length,
          offset: s.offset,
          ...(video ? gridOf(layout) : {}),
        });
        at += s.length;
      }
    }
    const total = layout.numEmbeddings + (track?.numEmbeddings ?? 0);
    for (let i = 0; i < total; i++) expanded.push(id);
    item += track ? 2 : 1;
  });
  if (item !== items.length)
    throw invalid(`the prompt has ${placeholderCount} media placeholders for ${items.length} media items`);
  return { tokenIds: expanded, spans, length: expanded.length };
}

function gridOf(layout: MediaItemLayout): { grid?: MediaGrid } {
  return layout.grid ? { grid: layout.grid } : {};
}

/** Item `item`'s layout, checked against its placeholder. */
function checkedLayout(
  items: readonly MediaItemLayout[],
  item: number,
  modality: Modality,
  placeholder: string,
): MediaItemLayout {
  const layout = items[item];
  if (!layout) throw invalid(`the prompt has more media placeholders than media items (${items.length})`);
  if (layout.trackOf !== undefined) throw invalid(`media item ${item} is an audio track without its video before it`);
  if (layout.modality !== modality)
    throw invalid(`${placeholder} stands for ${modality} but media item ${item} is ${layout.modality}`);
  if (!(Number.isInteger(layout.numEmbeddings) && layout.numEmbeddings >= 1))
    throw invalid(`media item ${item} has ${layout.numEmbeddings} embeddings`);
  if (layout.grid && layout.grid.t * layout.grid.h * layout.grid.w !== layout.numEmbeddings)
    throw invalid(`media item ${item}'s grid is not its ${layout.numEmbeddings} embeddings`);
  if (layout.audioTrack && !layout.grid) throw invalid(`media item ${item} has an audio track but no grid`);
  return layout;
}

/** The audio track after video `item`, checked (it must follow its video). */
function trackOf(items: readonly MediaItemLayout[], item: number): MediaItemLayout {
  const track = items[item + 1];
  if (!track || track.trackOf !== item || track.modality !== 'audio')
    throw invalid(`media item ${item} is heard with its audio track, but item ${item + 1} is not that track`);
  if (!(Number.isInteger(track.numEmbeddings) && track.numEmbeddings >= 1))
    throw invalid(`media item ${item + 1} has ${track.numEmbeddings} embeddings`);
  return track;
}

function invalid(message: string): ChorusError {
  return new ChorusError(ErrorCodes.REQUEST_INVALID, `${message}; put one placeholder per media item, in order`);
}

/**
 * The first position >= from that cannot be prefilled yet: the first position from there on whose row has not
 * arrived. ready[item] is true when all its rows are in, false when none is, or the count of its first rows in (an
 * item that comes in pieces: a clip's rows group by group). map.length when everything from `from` on can run.
 */
export function readyLimit(map: PositionMap, ready: readonly (boolean | number)[], from = 0): number {
  for (const span of map.spans) {
    if (span.start + span.length <= from) continue;
    const got = ready[span.item];
    if (got === true) continue;
    // Rows in of this span: the item's first `got` rows, of which this span holds rows offset.. onwards.
    const inSpan = got === false ? 0 : Math.max(0, got - (span.offset ?? 0));
    if (inSpan < span.length) return Math.max(from, span.start + inSpan);
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
    const offset = span.offset ?? 0;
    if (rows.length % hiddenSize !== 0 || (offset + span.length) * hiddenSize > rows.length) {
      throw new ChorusError(
        ErrorCodes.INTERNAL,
        `media item ${span.item} has ${rows.length / hiddenSize} rows of ${hiddenSize}; its placeholder expanded ` +
          `to ${span.length} from its row ${offset}`,
      );
    }
    const first = offset + from - span.start;
    out.set(rows.subarray(first * hiddenSize, (first + to - from) * hiddenSize), (from - start) * hiddenSize);
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
 * together; a video span's rows take (start + groupTime(t), start + row, start + col) over its grid, an image span
 * (t = 0) its row and column; the text after a span resumes from the largest position used plus one. A video heard
 * with its audio track (several spans at one placeholder) takes Qwen2.5-Omni's TMRoPE: its audio rows at
 * start + k on all three axes, on the same time axis as its frames (src/media/video/interleave.ts).
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
  const text = (until: number): void => {
    for (; at < until; next++) out.set([next, next, next], 3 * at++);
  };
  for (const group of placeholderGroups(map.spans)) {
    const first = group[0];
    text(first.start);
    const video = group.find((s) => s.grid);
    const grid = video?.grid ?? imageGrids.get(first.item);
    if (!grid) {
      text(first.start + first.length);
      continue;
    }
    const segments = group.map((s) => ({
      source: s.grid || !video ? ('video' as const) : ('audio' as const),
      offset: s.offset ?? 0,
      length: s.length,
    }));
    // An image is one temporal group at time 0; a video's groups are timeScale steps apart.
    const laid = interleavedPositions(segments, grid, video ? timeScale(video) : 0, next, 1);
    out.set(laid.positions, 3 * at);
    at += laid.positions.length / 3;
    next = laid.next;
  }
  text(map.length);
  return out;
}

/** Spans in runs of one placeholder each (a video heard with its track is several spans at one placeholder). */
function placeholderGroups(spans: readonly MediaSpan[]): MediaSpan[][] {
  const groups: MediaSpan[][] = [];
  for (const span of spans) {
    const last = groups.at(-1);
    if (last && last[0].placeholderIndex === span.placeholderIndex) last.push(span);
    else groups.push([span]);
  }
  return groups;
}
