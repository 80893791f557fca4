/**
 * The seeded mixed workload of `chorus bench --mix`: text prompts, images of 224-1080 px a side and 5-30 s clips, in
 * the proportions asked, arriving as a Poisson process; some media items repeat an earlier one byte for byte (what
 * an encoder-output store can serve). The same seed gives the same requests, bytes and arrival times, so every
 * router of one run sees exactly the same workload.
 */
import type { ContentPart } from '../../src/index.ts';
import { seededRandom } from '../ttfp/prompts.ts';
// Synthetic media, the same fixtures the tests use (as bench/encoders does).
import { pngBytes, wavBytes } from '../mediaSamples.ts';

export type MixKind = 'text' | 'image' | 'audio';

export interface Mix {
  readonly text: number;
  readonly image: number;
  readonly audio: number;
}

export interface MixRequest {
  readonly index: number;
  readonly kind: MixKind;
  /** When it is sent, from the start of the run. */
  readonly atMs: number;
  readonly text: string;
  /** The media part (null for text); `repeat` = the same bytes as an earlier request's. */
  readonly media: Extract<ContentPart, { type: 'audio' | 'image' }> | null;
  readonly repeat: boolean;
  /** Image side (px) or clip length (s), for the report. */
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

/** "text=0.6,image=0.25,audio=0.15" -> shares summing to 1 (refuses unknown kinds and a zero total). */
export function parseMix(spec: string): Mix {
  const mix: Record<MixKind, number> = { text: 0, image: 0, audio: 0 };
  for (const part of spec.split(',')) {
    const [kind, share] = part.split('=').map((s) => s.trim());
    const value = Number(share);
    if (!(kind in mix) || !Number.isFinite(value) || value < 0)
      throw new Error(`--mix takes kind=share pairs of text, image and audio (e.g. text=0.6,image=0.25,audio=0.15)`);
    mix[kind as MixKind] = value;
  }
  const total = mix.text + mix.image + mix.audio;
  if (total <= 0) throw new Error('--mix shares must add up to more than 0');
  return { text: mix.text / total, image: mix.image / total, audio: mix.audio / total };
}

const WORDS = 'the sea wind light river stone north morning song city garden winter road bird answer slow'.split(' ');

export function mixWorkload(o: MixWorkloadOptions): MixRequest[] {
  const random = seededRandom(o.seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const seen: Record<'image' | 'audio', MixRequest[]> = { image: [], audio: [] };
  const out: MixRequest[] = [];
  let atMs = 0;
  for (let index = 0; index < o.numRequests; index++) {
    atMs += (-Math.log(1 - random()) / o.ratePerSecond) * 1000;
    const r = random();
    const kind: MixKind = r < o.mix.text ? 'text' : r < o.mix.text + o.mix.image ? 'image' : 'audio';
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
