/**
 * A video's sampling and its grid, as Qwen2.5-VL lays one out: frames taken `fps` per second (uniformly over the clip
 * when that gives more than `maxFrames`), each resized to about `framePixels` with its aspect kept and both sides
 * multiples of patchSize * mergeSize, then cut into patches of `temporalPatchSize` (2) consecutive frames by patchSize
 * x patchSize pixels and merged mergeSize x mergeSize. So a clip's embedding count follows from its sampled frame count
 * and frame size alone, before anything is encoded: ceil(frames / 2) * (height / 28) * (width / 28).
 */
import type { MediaGrid } from '../../common/modality.ts';

export interface VideoSampling {
  /** Frames taken per second of video. */
  readonly fps: number;
  /** At most this many frames per clip; a longer clip is sampled uniformly over its whole length. */
  readonly maxFrames: number;
  /** Decode the clip's audio track too (mm_processor_kwargs.use_audio_in_video), heard interleaved with its frames. */
  readonly withAudio?: boolean;
}

export interface VideoGridConfig {
  readonly patchSize: number;
  readonly mergeSize: number;
  /** Frames of one temporal patch (Qwen2.5-VL: 2). */
  readonly temporalPatchSize: number;
  /** Largest area of a sampled frame, in pixels. */
  readonly framePixels: number;
}

export const DEFAULT_VIDEO_GRID: VideoGridConfig = {
  patchSize: 14,
  mergeSize: 2,
  temporalPatchSize: 2,
  framePixels: 224 * 224,
};

/**
 * The scale filter that sizes sampled frames (ffmpeg expression syntax): shrink to framePixels keeping the aspect,
 * both sides floored to a multiple of patchSize * mergeSize (at least one). Frames are never enlarged: a small clip
 * costs few rows. The frames ffmpeg writes carry their size (PPM), so nothing here has to predict it exactly.
 */
export function scaleFilter(grid: VideoGridConfig): string {
  const f = grid.patchSize * grid.mergeSize;
  const s = `min(1,sqrt(${grid.framePixels}/(iw*ih)))`;
  return `scale=w='max(${f},floor(iw*${s}/${f})*${f})':h='max(${f},floor(ih*${s}/${f})*${f})':flags=bilinear`;
}

/** The grid of numFrames frames of width x height (merged rows and columns; temporal groups). */
export function videoGrid(numFrames: number, width: number, height: number, grid: VideoGridConfig): MediaGrid {
  const f = grid.patchSize * grid.mergeSize;
  return { t: Math.ceil(numFrames / grid.temporalPatchSize), h: height / f, w: width / f };
}

export function videoEmbeddingCount(numFrames: number, width: number, height: number, grid: VideoGridConfig): number {
  const g = videoGrid(numFrames, width, height, grid);
  return g.t * g.h * g.w;
}

/**
 * Which of n sampled frames to keep when more than maxFrames: evenly spread over the clip, first and last included
 * (Qwen2.5-VL's linspace). All of them when n <= maxFrames.
 */
export function uniformPick(n: number, maxFrames: number): number[] {
  if (n <= maxFrames) return Array.from({ length: n }, (_, i) => i);
  if (maxFrames === 1) return [0];
  return Array.from({ length: maxFrames }, (_, i) => Math.round((i * (n - 1)) / (maxFrames - 1)));
}

/**
 * The rate the kept frames stand for: `fps` when none were dropped, else kept / (the clip's sampled length in s). The
 * time positions of the rows (and the audio interleave) follow this rate, not the one asked for.
 */
export function effectiveFps(sampled: number, kept: number, fps: number): number {
  return sampled <= kept ? fps : (fps * kept) / sampled;
}
