/**
 * The seeded mixed workload of `chorus bench --mix`: text prompts, images of 224-1080 px a side, 5-30 s audio clips
 * and videos (8-32 frames of 252 x 168 sampled at 2 fps, as main hands a decoded 4:3 clip to the engine), in the
 * proportions asked, arriving as a Poisson process; some media items repeat an earlier one byte for byte (what
 * an encoder-output store can serve). The same seed gives the same requests, bytes and arrival times, so every
 * router of one run sees exactly the same workload.
 */
import type { ContentPart } from '../../src/index.ts';
import { seededRandom } from '../ttfp/prompts.ts';
// Synthetic media, the same fixtures the tests use (as bench/encoders does).
import { decodedClip, pngBytes, wavBytes } from '../mediaSamples.ts';

export type MixKind = 'text' | 'image' | 'audio' | 'video';

/** Each kind's share of the requests. */
export type Mix = Readonly<Record<MixKind, number>>;

export interface MixRequest {
  readonly index: number;
  readonly kind: MixKind;
  /** When it is sent, from the start of the run. */
  readonly atMs: number;
  readonly text: string;
  /** The media part (null for text); `repeat` = the same bytes as an earlier request's. */
  readonly media: Extract<ContentPart, { type: 'audio' | 'image' | 'video' }> | null;
  readonly repeat: boolean;
  /** Image side (px), clip length (s) or a video's frames, for the report. */
  readonly size: number;
}

export interface MixWorkloadOptions {
  readonly mix: Mix;
  readonly numRequests: number;
  /** Mean arrival rate (requests/s). */
  readonly ratePerSecond: number;
  /** Share of media requests that repeat an earlier item of their modality. */
  readonly repeatShare: number;
  readonly seed: number;
}

/**
 * "text=0.6,image=0.25,audio=0.15" (kinds text, image, audio, video), or seed 001's "50/30/20" (text/image/video)
 * -> shares summing to 1 (refuses unknown kinds and a zero total).
 */
export function parseMix(spec: string): Mix {
  const mix: Record<MixKind, number> = { text: 0, image: 0, audio: 0, video: 0 };
  const usage =
    '--mix takes kind=share pairs of text, image, audio and video (e.g. text=0.6,image=0.25,audio=0.15), or ' +
    'text/image/video shares (e.g. 50/30/20)';
  const slashed = spec.includes('/') ? spec.split('/').map((s) => s.trim()) : null;
  if (slashed && slashed.length !== 3) throw new Error(usage);
  const pairs = slashed ? (['text', 'image', 'video'] as const).map((k, i) => [k, slashed[i]]) : spec.split(',');
  for (const part of pairs) {
    const [kind, share] = typeof part === 'string' ? part.split('=').map((s) => s.trim()) : part;
    const value = Number(share);
    if (!(kind in mix) || share === '' || !Number.isFinite(value) || value < 0) throw new Error(usage);
    mix[kind as MixKind] = value;
  }
  const total = mix.text + mix.image + mix.audio + mix.video;
  if (total <= 0) throw new Error('--mix shares must add up to more than 0');
  return { text: mix.text / total, image: mix.image / total, audio: mix.audio / total, video: mix.video / total };
}

const WORDS = 'the sea wind light river stone north morning song city garden winter road bird answer slow'.split(' ');

export function mixWorkload(o: MixWorkloadOptions): MixRequest[] {
  const random = seededRandom(o.seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const seen: Record<Exclude<MixKind, 'text'>, MixRequest[]> = { image: [], audio: [], video: [] };
  const out: MixRequest[] = [];
  let atMs = 0;
  for (let index = 0; index < o.numRequests; index++) {
    atMs += (-Math.log(1 - random()) / o.ratePerSecond) * 1000;
    const r = random();
    const kind: MixKind =
      r < o.mix.text
        ? 'text'
        : r < o.mix.text + o.mix.image
          ? 'image'
          : r < o.mix.text + o.mix.image + o.mix.audio
            ? 'audio'
            : 'video';
    const words = Array.from({ length: between(8, 60) }, () => WORDS[between(0, WORDS.length - 1)]);
    const text = `Request ${index}: ${words.join(' ')}`;
    if (kind === 'text') {
      out.push({ index, kind, atMs, text, media: null, repeat: false, size: 0 });
      continue;
    }
    const earlier = seen[kind];
    const repeatOf = earlier.length > 0 && random() < o.repeatShare ? earlier[between(0, earlier.length - 1)] : null;
    let req: MixRequest;
    if (repeatOf) req = { ...repeatOf, index, atMs, text, repeat: true };
    else if (kind === 'image') {
      const [w, h] = [between(224, 1080), between(224, 1080)];
      req = {
        index,
        kind,
        atMs,
        text,
        media: { type: 'image', data: pngBytes(w, h, index + 1) },
        repeat: false,
        size: Math.max(w, h),
      };
    } else if (kind === 'video') {
      const numFrames = between(8, 32);
      req = { index, kind, atMs, text, media: videoFrames(numFrames, index + 1), repeat: false, size: numFrames };
    } else {
      const seconds = between(5, 30);
      const data = wavBytes(seconds, 24_000, index + 1);
      req = { index, kind, atMs, text, media: { type: 'audio', data, format: 'wav' }, repeat: false, size: seconds };
    }
    if (!repeatOf) earlier.push(req);
    out.push(req);
  }
  return out;
}

/** A decoded clip as main hands it to the engine (mediaSamples.ts decodedClip), a source key of its own. */
export function videoFrames(numFrames: number, seed: number): Extract<ContentPart, { type: 'video' }> {
  return decodedClip(numFrames, `bench-mix-video-${seed}`, seed);
}
