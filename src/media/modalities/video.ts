/**
 * Video: `video_url` parts (an mp4/webm/mov/mkv file as a data: URL, or an allow-listed URL) and `video` parts (a
 * clip given as a list of frame images) -> frames sampled and sized by a child ffmpeg in main (src/media/video), so
 * the count and grid are exact before admission: ceil(frames / 2) x (height / 28) x (width / 28) embeddings. The
 * frames travel to the video encoder stage, which cuts them into temporal patches (src/media/video/videoPatches.ts).
 *
 * Keys: main hashes the source's bytes with its sampling (fps, max_frames, frame size, decoder version) into the
 * part's sourceKey, so the encoder-output store finds a clip asked again the same way without hashing its frames;
 * the encoder's own content key hashes the sampled frames, so the same frames from another file still hit.
 */
import { createHash } from 'node:crypto';
import type { VideoSettings } from '../../common/encoderSettings.ts';
import type { MediaBody } from '../../common/payloads.ts';
import { PREPROCESS_VERSION } from '../mediaKey.ts';
import { mediaInvalid } from '../mediaError.ts';
import { decodeVideo, TRACK_SAMPLE_RATE_HZ, type VideoSource } from '../video/decodeVideo.ts';
import { AUDIO_ROWS_PER_SECOND } from '../audio.ts';
import { videoPatches } from '../video/videoPatches.ts';
import { DEFAULT_VIDEO_GRID, videoGrid, type VideoGridConfig, type VideoSampling } from '../video/videoGrid.ts';
import type { ModalityDef, PartOf } from './ModalityDef.ts';
import type { DecodedClips } from '../video/DecodedClips.ts';

/** What the video path needs of its encoder stage: the model's patch grid and the `video:` settings. */
export interface VideoStageSettings {
  readonly imageGrid: { readonly patchSize: number; readonly mergeSize: number } | null;
  readonly video: VideoSettings | null;
}

/** Bump when the decoder's sampling or sizing changes what a given file becomes. */
export const VIDEO_DECODER_VERSION = 1;

/** The grid a video encoder stage's settings describe. */
export function videoGridOf(settings: VideoStageSettings): VideoGridConfig {
  return {
    patchSize: settings.imageGrid?.patchSize ?? DEFAULT_VIDEO_GRID.patchSize,
    mergeSize: settings.imageGrid?.mergeSize ?? DEFAULT_VIDEO_GRID.mergeSize,
    temporalPatchSize: settings.video?.temporalPatchSize ?? DEFAULT_VIDEO_GRID.temporalPatchSize,
    framePixels: settings.video?.framePixels ?? DEFAULT_VIDEO_GRID.framePixels,
  };
}

export const video: ModalityDef<'video'> = {
  name: 'video',
  encoder: 'vision',
  formats: ['video'],
  keyedBlocks: true,

  shapeProblem(part, at) {
    if (!(part.data instanceof Uint8Array)) return `${at}.data must be the frames' RGB bytes (a Uint8Array)`;
    for (const k of ['numFrames', 'width', 'height'] as const) {
      if (!Number.isSafeInteger(part[k]) || part[k] < 1) return `${at}.${k} must be a positive integer`;
    }
    if (!(part.fps > 0)) return `${at}.fps must be a positive number`;
    if (part.data.byteLength !== part.numFrames * part.width * part.height * 3)
      return `${at}.data must hold numFrames RGB frames of width x height`;
    if (typeof part.sourceKey !== 'string' || part.sourceKey.length === 0) return `${at}.sourceKey must be a string`;
    if (part.audio !== undefined && (!(part.audio instanceof Uint8Array) || part.audio.byteLength % 2 !== 0))
      return `${at}.audio must be the track's 16 kHz pcm16 bytes (a Uint8Array of whole samples)`;
    return null;
  },

  layout(part, settings, what) {
    const grid = videoGridOf(settings);
    const f = grid.patchSize * grid.mergeSize;
    if (part.width % f !== 0 || part.height % f !== 0)
      throw mediaInvalid(what, `frames of ${part.width}x${part.height} are not multiples of ${f} px`);
    const g = videoGrid(part.numFrames, part.width, part.height, grid);
    if (!part.audio) return { numEmbeddings: g.t * g.h * g.w, grid: g };
    // Heard with its track: the track is an audio item of its own (the audio encoder's), interleaved with the frames
    // in time chunks on the clip's effective rate (src/media/video/interleave.ts).
    const track: PartOf<'audio'> = {
      type: 'audio',
      data: part.audio,
      format: 'pcm16',
      sampleRateHz: TRACK_SAMPLE_RATE_HZ,
    };
    const timing = { rowsPerSecond: AUDIO_ROWS_PER_SECOND, secondsPerChunk: settings.video?.audioChunkSeconds ?? 2 };
    const secondsPerGroup = grid.temporalPatchSize / part.fps;
    return { numEmbeddings: g.t * g.h * g.w, grid: g, audioTrack: { part: track, secondsPerGroup, timing } };
  },

  body(part, item, what): MediaBody {
    const { numFrames, width, height, fps, sourceKey } = part;
    return {
      kind: 'media',
      item,
      format: 'video',
      what,
      bytes: part.data,
      video: { numFrames, width, height, fps, sourceKey },
    };
  },

  prepare(body, settings, encoderIdentity, cacheSalt) {
    const v = body.video;
    if (body.format !== 'video' || !v) throw mediaInvalid(body.what, `the video encoder got format ${body.format}`);
    const grid = videoGridOf(settings);
    const frames = { data: body.bytes, numFrames: v.numFrames, width: v.width, height: v.height };
    const g = videoGrid(v.numFrames, v.width, v.height, grid);
    let patches: ReturnType<typeof videoPatches> | undefined;
    const input = () => (patches ??= videoPatches(frames, grid, body.what));
    const header = JSON.stringify({
      modality: 'video',
      encoderId: encoderIdentity,
      dims: [v.numFrames, v.height, v.width, grid.patchSize, grid.mergeSize, grid.temporalPatchSize],
      fps: v.fps,
      preprocess: PREPROCESS_VERSION,
      ...(cacheSalt === undefined ? {} : { cacheSalt }),
    });
    const key = createHash('sha256').update(header).update(body.bytes).digest('hex');
    return { key, numEmbeddings: g.t * g.h * g.w, input };
  },
};

/** A request's sampling: its mm_processor_kwargs over the stage's defaults (checked by the caller). */
export function samplingOf(settings: VideoSettings, asked: Partial<VideoSampling>): VideoSampling {
  const sampling = { fps: asked.fps ?? settings.fps, maxFrames: asked.maxFrames ?? settings.maxFrames };
  return asked.withAudio === true ? { ...sampling, withAudio: true } : sampling;
}

/**
 * A clip's sourceKey: its bytes (or its frame images' hashes) with its sampling and the frame grid, under the
 * decoder's version. The track does not change the frames (it has its own key, the hash of its samples).
 */
export function videoSourceKey(source: VideoSource, sampling: VideoSampling, grid: VideoGridConfig): string {
  const { fps, maxFrames } = sampling;
  const hash = createHash('sha256').update(
    JSON.stringify({ decoder: VIDEO_DECODER_VERSION, kind: source.kind, sampling: { fps, maxFrames }, grid }),
  );
  if (source.kind === 'file') hash.update(source.bytes);
  else for (const image of source.images) hash.update(createHash('sha256').update(image).digest());
  return hash.digest('hex');
}

/**
 * Decodes a clip (a file, or frame images) in a child ffmpeg into the engine's video part, or takes it from `clips`
 * when the same clip was decoded the same way before. Throws a CHORUS_ERR_VIDEO_* error naming `what` and the limit
 * it passed; `cancel` stops the decode (the request is gone).
 */
export async function videoPart(
  source: VideoSource,
  sampling: VideoSampling,
  settings: VideoStageSettings & { readonly video: VideoSettings; readonly decoderNice?: number },
  what: string,
  cancel?: AbortSignal,
  clips?: DecodedClips,
): Promise<PartOf<'video'>> {
  const grid = videoGridOf(settings);
  const s = settings.video;
  const sourceKey = videoSourceKey(source, sampling, grid);
  // What else decides a decode's outcome: the track, and the limits it had to pass.
  const decodeKey = JSON.stringify([sourceKey, sampling.withAudio === true, s.maxSeconds, s.maxFrameBytes]);
  const kept = clips?.get(decodeKey);
  if (kept) return kept;
  const decoded = await decodeVideo(
    source,
    sampling,
    grid,
    {
      maxSeconds: s.maxSeconds,
      maxInputBytes: s.maxInputBytes,
      maxFrameBytes: s.maxFrameBytes,
      timeoutMs: s.decodeTimeoutMs,
      ...(settings.decoderNice === undefined ? {} : { nice: settings.decoderNice }),
    },
    what,
    cancel,
  );
  const part: PartOf<'video'> = {
    type: 'video',
    data: decoded.data,
    numFrames: decoded.numFrames,
    width: decoded.width,
    height: decoded.height,
    fps: decoded.fps,
    sourceKey,
    ...(decoded.audio ? { audio: decoded.audio } : {}),
  };
  clips?.set(decodeKey, part);
  return part;
}
