/**
 * Video in chat completions: `video_url` parts ({url: a data: URL of an mp4/webm/mov/mkv file, or an allow-listed
 * URL}, vLLM's shape), `video` parts (a clip as a list of frame images, data: URLs, Qwen's shape), and the request's
 * sampling, `mm_processor_kwargs: {fps, max_frames, use_audio_in_video}` (vLLM's field) over the video encoder stage's
 * `encoder.video` defaults. Every kwarg is honoured or refused by name. A part is checked here synchronously (its
 * transport, its size); its decode runs later, in a child ffmpeg, once every part of the body has passed.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { ContentPart } from '../../common/engine.ts';
import { ErrorCodes } from '../../common/errors.ts';
import { mediaInvalid } from '../../media/mediaError.ts';
import { resolveMediaUrl } from '../../media/mediaUrl.ts';
import { imagePart } from '../../media/modalities/image.ts';
import { samplingOf, videoPart } from '../../media/modalities/video.ts';
import type { VideoSource } from '../../media/video/decodeVideo.ts';
import type { VideoSampling } from '../../media/video/videoGrid.ts';
import { fetchMedia } from '../media/fetchMedia.ts';
import type { MediaSources, VideoSettingsOf } from '../media/mediaParts.ts';
import { ClientInputError } from '../validate.ts';

export const MmProcessorKwargs = Type.Object(
  {
    fps: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 60 })),
    max_frames: Type.Optional(Type.Integer({ minimum: 1 })),
    use_audio_in_video: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type MmProcessorKwargs = Static<typeof MmProcessorKwargs>;

/** Videos one request may carry: each is a decoder process for up to its time limit. */
export const MAX_VIDEOS = 4;

/** Media types a data: URL may declare for a video file ('' = none given: the decoder probes the bytes). */
const VIDEO_TYPES = new Set(['', 'video/mp4', 'video/webm', 'video/quicktime', 'video/x-matroska', 'video/x-m4v']);

/** A video waiting for its decode (and fetch, for an allowed remote URL). */
export interface PendingVideo {
  readonly what: string;
  readonly source: VideoSource | URL;
}

/**
 * Refuses, by name, a kwarg Chorus cannot honour (settings: the video encoder stage's, null without one).
 * use_audio_in_video is honoured: the decoder takes the track and the prompt interleaves it with the frames; a clip
 * without one is refused by the decoder (CHORUS_ERR_VIDEO_NO_AUDIO), a pipeline without an audio encoder by the
 * prompt's probe (CHORUS_ERR_MEDIA_INVALID).
 */
export function checkKwargs(kwargs: MmProcessorKwargs, settings: VideoSettingsOf | null): void {
  const limit = settings?.video.maxFrames ?? Number.POSITIVE_INFINITY;
  if (kwargs.max_frames !== undefined && kwargs.max_frames > limit) {
    throw new ClientInputError(
      `mm_processor_kwargs.max_frames is ${kwargs.max_frames}; this server samples at most ${limit} frames per clip ` +
        '(encoder.video.max_frames): ask for fewer',
      'mm_processor_kwargs.max_frames',
    );
  }
}

/** The request's sampling: its kwargs over the stage defaults. */
export function videoSampling(kwargs: MmProcessorKwargs | undefined, settings: VideoSettingsOf): VideoSampling {
  if (kwargs) checkKwargs(kwargs, settings);
  return samplingOf(settings.video, {
    fps: kwargs?.fps,
    maxFrames: kwargs?.max_frames,
    withAudio: kwargs?.use_audio_in_video,
  });
}

function settingsOrRefuse(media: MediaSources, what: string): VideoSettingsOf {
  if (!media.video)
    throw mediaInvalid(
      what,
      'this pipeline has no video encoder, so video input cannot be used (serve a config with one, e.g. ' +
        'configs/tiny-omni.yaml)',
    );
  return media.video;
}

/** A `video_url` part: a data: URL of a video file, or an allow-listed remote URL (fetched later). */
export function videoUrlPart(url: string, what: string, media: MediaSources): PendingVideo {
  const settings = settingsOrRefuse(media, what);
  const resolved = resolveMediaUrl(url, media.allowList, what);
  if (resolved.kind === 'remote') return { what, source: resolved.url };
  const { mediaType, bytes } = resolved.data;
  if (!VIDEO_TYPES.has(mediaType))
    throw mediaInvalid(what, `the data URL holds ${mediaType}; send video/mp4, video/webm, video/quicktime or mkv`);
  if (bytes.byteLength === 0) throw mediaInvalid(what, 'the data URL holds no bytes');
  checkInputSize(bytes.byteLength, settings, what);
  return { what, source: { kind: 'file', bytes } };
}

/** A `video` part: the clip's frames as image data: URLs, in order (inline only: nothing is fetched per frame). */
export function videoFramesPart(urls: readonly string[], what: string, media: MediaSources): PendingVideo {
  const settings = settingsOrRefuse(media, what);
  const images = urls.map((u, k) => imagePart(u, `${what} frame ${k}`, []) as { data: Uint8Array });
  checkInputSize(
    images.reduce((n, i) => n + i.data.byteLength, 0),
    settings,
    what,
  );
  return { what, source: { kind: 'frames', images: images.map((i) => i.data) } };
}

function checkInputSize(bytes: number, settings: VideoSettingsOf, what: string): void {
  const limit = settings.video.maxInputBytes;
  if (bytes > limit) {
    throw new ClientInputError(
      `${what}: the video is ${bytes} bytes; the limit is ${limit} (encoder.video.max_input_bytes)`,
      null,
      ErrorCodes.VIDEO_TOO_LARGE,
    );
  }
}

/** Fetches (when remote) and decodes one video into its engine part; `cancel` (the client left) stops both. */
export async function loadVideo(
  pending: PendingVideo,
  sampling: VideoSampling,
  media: MediaSources,
  cancel?: AbortSignal,
): Promise<ContentPart> {
  const settings = settingsOrRefuse(media, pending.what);
  const source: VideoSource =
    pending.source instanceof URL
      ? { kind: 'file', bytes: await fetchMedia(pending.source, media, pending.what, 'video/*', cancel) }
      : pending.source;
  media.decodedClips?.resize(settings.video.decodedCacheBytes);
  return videoPart(source, sampling, settings, pending.what, cancel, media.decodedClips);
}
