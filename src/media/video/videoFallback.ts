/**
 * The fallback of a clip that does not fit (issue 44 item 7): rather than refuse a clip whose rows exceed the
 * Thinker's budget for media rows, its positions, or the edge to its encoder, main serves it with fewer frames, then
 * smaller ones, under the video encoder stage's `encoder.video.fallback` policy: each step keeps `frames_factor` of the
 * frames (a uniform pick over the clip, first and last kept) until `min_frames`, then shrinks each frame's area by
 * `pixels_factor` until `min_frame_pixels`; past that floor the request is refused as before, naming the floor. No
 * second decode: the frames main holds are picked and resized here (bilinear), so a step costs milliseconds.
 *
 * The clip's time axis follows the frames kept (its effective fps), so positions and the audio interleave stay right;
 * its sourceKey names the step, so the encoder-output store and the prefix cache never mistake it for the full clip.
 */
import { createHash } from 'node:crypto';
import type { ContentPart } from '../../common/engine.ts';
import type { VideoFallbackSettings } from '../../common/encoderSettings.ts';
import { resizeBilinear } from '../resizeBilinear.ts';
import { uniformPick } from './videoGrid.ts';

type VideoPart = Extract<ContentPart, { readonly type: 'video' }>;

/** A clip's sampling at one step: frames kept and their size. */
export interface FallbackStep {
  readonly numFrames: number;
  readonly width: number;
  readonly height: number;
}

/**
 * The step after `at` for a clip, or null at the floor. `cell` is the patch grid's side (28 px): frame sides stay
 * multiples of it, at least one cell.
 */
export function nextStep(at: FallbackStep, policy: VideoFallbackSettings, cell: number): FallbackStep | null {
  if (at.numFrames > policy.minFrames) {
    return { ...at, numFrames: Math.max(policy.minFrames, Math.floor(at.numFrames * policy.framesFactor)) };
  }
  if (at.width * at.height <= policy.minFramePixels) return null;
  const scale = Math.sqrt(Math.max(policy.pixelsFactor, policy.minFramePixels / (at.width * at.height)));
  const side = (s: number) => Math.max(cell, Math.floor((s * scale) / cell) * cell);
  const next = { ...at, width: side(at.width), height: side(at.height) };
  // A side already at one cell cannot shrink: the floor is reached when neither does.
  return next.width === at.width && next.height === at.height ? null : next;
}

/** The clip at `step`: its frames picked uniformly and resized, its rate and key following. */
export function reducedVideo(part: VideoPart, step: FallbackStep): VideoPart {
  const frameBytes = part.width * part.height * 3;
  const picked = uniformPick(part.numFrames, step.numFrames);
  const outBytes = step.width * step.height * 3;
  const data = new Uint8Array(picked.length * outBytes);
  picked.forEach((f, k) => {
    const frame = part.data.subarray(f * frameBytes, (f + 1) * frameBytes);
    if (step.width === part.width && step.height === part.height) return data.set(frame, k * outBytes);
    const resized = resizeBilinear({ width: part.width, height: part.height, data: frame }, step.width, step.height);
    for (let i = 0; i < outBytes; i++) data[k * outBytes + i] = Math.min(255, Math.max(0, Math.round(resized[i])));
  });
  // The frames kept stand for the clip's whole length: fewer of them, a lower rate.
  const fps = (part.fps * picked.length) / part.numFrames;
  const sourceKey = createHash('sha256')
    .update(JSON.stringify(['fallback', part.sourceKey, picked.length, step.width, step.height]))
    .digest('hex');
  return { ...part, data, numFrames: picked.length, width: step.width, height: step.height, fps, sourceKey };
}
