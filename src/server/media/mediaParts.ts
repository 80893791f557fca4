/**
 * Client media -> the engine's content parts, for both protocols. The parsing of each modality's part lives with the
 * modality (src/media/modalities: audioPart, imagePart, realtimeImagePart, videoPart); this file only names them for
 * the front end. Items are named as the engine names them, `messages[0].content[1] (image)`, so a client sees one
 * style whichever layer refused its media.
 */
import type { VideoSettings } from '../../common/encoderSettings.ts';
import type { MediaFetchLimits } from './fetchMedia.ts';
import type { DecodedClips } from '../../media/video/DecodedClips.ts';

export type { MediaPart } from '../../media/modalities/index.ts';
export { audioPart } from '../../media/modalities/audio.ts';
export { imagePart as inlineImage, realtimeImagePart } from '../../media/modalities/image.ts';

export interface MediaSources extends MediaFetchLimits {
  /** URL prefixes media may be fetched from; empty = remote URLs are refused. */
  readonly allowList: readonly string[];
  /** The video encoder stage's settings; null when the pipeline has none (video parts are refused). */
  readonly video?: VideoSettingsOf | null;
  /** Clips decoded before, for the next question about the same clip (none: every clip is decoded). */
  readonly decodedClips?: DecodedClips;
}

/** What the front end needs of the video encoder stage: its sampling defaults and limits, and its patch grid. */
export interface VideoSettingsOf {
  readonly video: VideoSettings;
  readonly imageGrid: { readonly patchSize: number; readonly mergeSize: number } | null;
  /**
   * The decoder child's priority (an absolute nice value): its encoder stage's (stage_nice + its engine.nice below
   * main), so a clip's decode, which is the encode's first part, never takes the CPU from the Thinker's steps.
   */
  readonly decoderNice: number;
}
