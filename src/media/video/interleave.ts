/**
 * A clip heard with its audio track (`use_audio_in_video`), laid out as Qwen2.5-Omni's TMRoPE lays one: the clip's
 * rows and its track's rows share one time axis of `rowsPerSecond` steps (25: the audio encoder's rate, one audio row
 * per 40 ms), cut into chunks of `secondsPerChunk` seconds; each chunk puts the video rows whose temporal group starts
 * in it, then the audio rows that fall in it. A temporal group t starts at t x secondsPerGroup seconds, where
 * secondsPerGroup is the temporal patch over the clip's effective rate (the rate the kept frames stand for when
 * max_frames binds, not the rate asked: vllm #50142 fed the asked rate and put the audio beside the wrong frames).
 *
 * Chunks are cut by time, not by row count: a chunk without a group start (fps under one group per chunk) carries
 * its audio alone, and a track longer than the clip ends with audio-only chunks, a shorter one with video-only ones.
 */
import type { MediaGrid } from '../../common/modality.ts';

export interface InterleaveTiming {
  /** Time steps per second: the audio encoder's rows per second (25). */
  readonly rowsPerSecond: number;
  /** Seconds per chunk (Qwen2.5-Omni: 2). */
  readonly secondsPerChunk: number;
}

/** A run of one stream's rows at its place in the interleaved sequence. */
export interface TrackSegment {
  readonly source: 'video' | 'audio';
  /** First row of that stream's rows (video rows in t, row, column order; audio rows in time order). */
  readonly offset: number;
  readonly length: number;
}

/** The time step of temporal group t (Qwen2.5-Omni truncates: `(t * second_per_grid * 25).long()`). */
export function groupTime(t: number, secondsPerGroup: number, rowsPerSecond: number): number {
  // The epsilon keeps an exact product (0.1 x 3 x 25 = 7.5 after rounding errors) from truncating one step low.
  return Math.floor(t * secondsPerGroup * rowsPerSecond + 1e-6);
}

/** Time steps per chunk (at least 1). */
export function stepsPerChunk(timing: InterleaveTiming): number {
  return Math.max(1, Math.trunc(timing.rowsPerSecond * timing.secondsPerChunk));
}

/**
 * The interleaved order of a clip's rows (grid, groups secondsPerGroup apart) and its track's audioRows rows. The
 * segments cover both streams exactly once, each stream in its own order.
 */
export function interleaveLayout(
  grid: MediaGrid,
  secondsPerGroup: number,
  audioRows: number,
  timing: InterleaveTiming,
): TrackSegment[] {
  const perChunk = stepsPerChunk(timing);
  const perGroup = grid.h * grid.w;
  // Groups per chunk: their times only grow, so each chunk's groups are one run.
  const groupsIn = new Map<number, { first: number; count: number }>();
  for (let t = 0; t < grid.t; t++) {
    const chunk = Math.floor(groupTime(t, secondsPerGroup, timing.rowsPerSecond) / perChunk);
    const run = groupsIn.get(chunk);
    if (run) run.count++;
    else groupsIn.set(chunk, { first: t, count: 1 });
  }
  const lastVideoChunk = grid.t === 0 ? -1 : Math.max(...groupsIn.keys());
  const chunks = Math.max(lastVideoChunk + 1, Math.ceil(audioRows / perChunk));
  const segments: TrackSegment[] = [];
  for (let c = 0; c < chunks; c++) {
    const run = groupsIn.get(c);
    if (run) segments.push({ source: 'video', offset: run.first * perGroup, length: run.count * perGroup });
    const from = c * perChunk;
    const to = Math.min(audioRows, from + perChunk);
    if (to > from) segments.push({ source: 'audio', offset: from, length: to - from });
  }
  return segments;
}

/**
 * TMRoPE positions [temporal, height, width] of an interleaved clip, in its interleaved order, from `start` (the next
 * text position): a video row of group t, row r, column c takes (start + groupTime(t), start + r, start + c); audio
 * row k takes start + k on all three axes. Returns them and the next text position (one past the largest used).
 */
export function interleavedPositions(
  segments: readonly TrackSegment[],
  grid: MediaGrid,
  secondsPerGroup: number,
  start: number,
  rowsPerSecond: number,
): { readonly positions: Int32Array; readonly next: number } {
  const total = segments.reduce((n, s) => n + s.length, 0);
  const positions = new Int32Array(total * 3);
  const perGroup = grid.h * grid.w;
  let at = 0;
  let top = start - 1;
  const put = (t: number, h: number, w: number): void => {
    positions.set([t, h, w], 3 * at++);
    top = Math.max(top, t, h, w);
  };
  for (const s of segments) {
    for (let k = s.offset; k < s.offset + s.length; k++) {
      if (s.source === 'audio') {
        put(start + k, start + k, start + k);
        continue;
      }
      const t = Math.floor(k / perGroup);
      const cell = k % perGroup;
      const time = start + groupTime(t, secondsPerGroup, rowsPerSecond);
      put(time, start + Math.floor(cell / grid.w), start + (cell % grid.w));
    }
  }
  return { positions, next: top + 1 };
}
