/**
 * What main does when a Thinker asks for an item to be encoded again (`media_retry`, issue 44 item 7), pure: the
 * messages of the request's next run, or the item's final failure.
 *
 * - Its encode failed for memory (CHORUS_ERR_ENCODE_MEMORY: over the encoder's max_encode_bytes, or onnxruntime could
 *   not allocate it) or time (CHORUS_ERR_CHUNK_TIMEOUT: its rows were not at the Thinker within the encoder's
 *   timeout_ms): a clip steps one step down its encoder stage's `encoder.video.fallback` (fewer frames, then smaller
 *   ones: videoFallback.ts) and the request runs again with it; past the floor, with the fallback off, or for an item
 *   that is not a clip, the item fails with the error and what to do.
 * - Its encoder-output store entry was lost (CHORUS_ERR_EC_ENTRY_LOST: evicted from Redis, or its holder went away,
 *   between main's lookup and the Thinker's take): the request runs again with the same messages, the entry forgotten,
 *   so the item goes to an encoder with the bytes main still holds.
 * - Its encode was skipped for KV its Thinker's prefix cache was known to hold and did not hold at prefill
 *   (CHORUS_ERR_KV_NOT_HELD: evicted since main's index heard of it): the request runs again with the same messages,
 *   every item encoded this time.
 *
 * A request runs again at most MAX_REENCODES times (each step down is one; a floor is a few steps away).
 */
import type { ChatMessage, ContentPart } from '../../common/engine.ts';
import { ErrorCodes, type SerializedError } from '../../common/errors.ts';
import type { VideoFallbackSettings } from '../../common/encoderSettings.ts';
import { nextStep, reducedVideo, type FallbackStep } from '../../media/video/videoFallback.ts';

type VideoPart = Extract<ContentPart, { readonly type: 'video' }>;

/** Runs of one request at most, its first included, beyond which an item fails rather than run again. */
export const MAX_REENCODES = 8;

export interface ReencodeAsk {
  /** The messages the failed run was built from (after any planned fallback). */
  readonly messages: readonly ChatMessage[];
  /** The item: its content part (the very object in `messages`), its name, its modality. */
  readonly item: { readonly part: unknown; readonly what: string; readonly modality: string };
  readonly error: SerializedError;
  /** Its encoder stage's fallback (null: off), and the frame grid's cell (patch x merge, 28 px). */
  readonly fallback: VideoFallbackSettings | null;
  readonly cell: number;
  /** Times the request was run again already. */
  readonly reencodes: number;
}

export type ReencodeDecision =
  | {
      readonly kind: 'again';
      readonly messages: readonly ChatMessage[];
      /** The clip stepped down (null: the same messages, a lost store entry encoded again). */
      readonly stepped: { readonly from: FallbackStep; readonly to: FallbackStep } | null;
    }
  | { readonly kind: 'fail'; readonly error: SerializedError };

export function reencodeDecision(ask: ReencodeAsk): ReencodeDecision {
  const { error, item } = ask;
  const fail = (why: string): ReencodeDecision => ({
    kind: 'fail',
    error: { code: error.code, message: `${error.message} (not encoded again: ${why})` },
  });
  if (ask.reencodes >= MAX_REENCODES - 1) return fail(`the request ran ${MAX_REENCODES} times already`);
  if (error.code === ErrorCodes.EC_ENTRY_LOST || error.code === ErrorCodes.KV_NOT_HELD)
    return { kind: 'again', messages: ask.messages, stepped: null };
  if (item.modality !== 'video') return fail(`only a clip can be encoded again with fewer or smaller frames`);
  if (!ask.fallback) return fail('encoder.video.fallback is off');
  const part = item.part as VideoPart;
  const step = nextStep(part, ask.fallback, ask.cell);
  if (!step) return fail(`${item.what} is at the fallback's floor (encoder.video.fallback)`);
  const reduced = reducedVideo(part, step);
  const messages = ask.messages.map((m) =>
    typeof m.content === 'string' || !m.content.includes(part as ContentPart)
      ? m
      : { ...m, content: m.content.map((p) => (p === part ? reduced : p)) },
  );
  return { kind: 'again', messages, stepped: { from: framesOf(part), to: framesOf(step) } };
}

/** Why an item was encoded again, as /metrics labels it (chorus_media_reencodes_total{reason}). */
export type ReencodeReason = 'memory' | 'timeout' | 'lost' | 'kv';

export function reencodeReason(code: string): ReencodeReason {
  if (code === ErrorCodes.EC_ENTRY_LOST) return 'lost';
  if (code === ErrorCodes.KV_NOT_HELD) return 'kv';
  return code === ErrorCodes.CHUNK_TIMEOUT ? 'timeout' : 'memory';
}

/** The answer's warning for a clip served with fewer or smaller frames after its encode failed. */
export function reencodeWarning(what: string, first: FallbackStep, now: FallbackStep, error: SerializedError): string {
  const why = error.code === ErrorCodes.CHUNK_TIMEOUT ? "past the encoder's timeout_ms" : 'out of memory';
  return (
    `${what} was served with ${said(now)} instead of ${said(first)}: its encode failed ${why} (${error.code}) ` +
    `and it was encoded again with fewer or smaller frames (encoder.video.fallback)`
  );
}

function framesOf(p: FallbackStep): FallbackStep {
  return { numFrames: p.numFrames, width: p.width, height: p.height };
}

function said(p: FallbackStep): string {
  return `${p.numFrames} frames of ${p.width}x${p.height}`;
}
