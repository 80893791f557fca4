/**
 * What main tells a stage instance about a request or a session, as kind messages (`{type: 'kind'}`): main names no
 * kind. It sends each event to the instances its rule picks (every stage of the request; the instance holding a
 * session's prefix; the instance reading the request's media), and a kind listens to those it cares about
 * (StageCore.onKindMessage).
 */
import type { SerializedError } from '../src/common/errors.ts';
import type { KindMessage, MainToStage } from '../src/worker/messages.ts';

/**
 * To every stage of the request: its first audio reached main (or its audio ended without any). The Thinker ends its
 * first-packet hold, a Talker that has not sized its first chunk yet stops fitting it to the held rows.
 */
export interface FirstAudio {
  readonly type: 'first_audio';
}

/** To the instance holding it: free the prompt prefix retained under `key` (its session closed or dropped a turn). */
export interface ReleasePrefix {
  readonly type: 'release_prefix';
  readonly key: string;
}

/**
 * To the instance reading the request's media: encoder instance `fromInstance` will not deliver its items; with
 * `item`, that item only (the answer to its `media_retry`: main will not encode it again).
 */
export interface MediaFailed {
  readonly type: 'media_failed';
  readonly fromInstance: string;
  readonly error: SerializedError;
  readonly item?: number;
}

export type RequestEvent = FirstAudio | ReleasePrefix | MediaFailed;

export function firstAudioMessage(requestId: string): KindMessage<FirstAudio> {
  return { type: 'kind', requestId, body: { type: 'first_audio' } };
}

export function releasePrefixMessage(key: string): MainToStage {
  return { type: 'kind', body: { type: 'release_prefix', key } };
}

export function mediaFailedMessage(
  requestId: string,
  fromInstance: string,
  error: SerializedError,
  item?: number,
): KindMessage<MediaFailed> {
  const which = item === undefined ? {} : { item };
  return { type: 'kind', requestId, body: { type: 'media_failed', fromInstance, error, ...which } };
}

export function isFirstAudio(body: unknown): body is FirstAudio {
  return typeof body === 'object' && body !== null && (body as { type?: unknown }).type === 'first_audio';
}

/**
 * The body as a RequestEvent, or null when it is none (a kind's own message, or garbage from a foreign writer on a
 * remote channel: the control shapes check the envelope only, so the fields a kind reads are checked here).
 */
export function requestEventOf(body: unknown): RequestEvent | null {
  if (isFirstAudio(body)) return { type: 'first_audio' };
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  switch (b.type) {
    case 'release_prefix':
      return typeof b.key === 'string' ? { type: 'release_prefix', key: b.key } : null;
    case 'media_failed': {
      if (typeof b.fromInstance !== 'string' || typeof b.error !== 'object' || b.error === null) return null;
      const item = Number.isInteger(b.item) && (b.item as number) >= 0 ? { item: b.item as number } : {};
      return { type: 'media_failed', fromInstance: b.fromInstance, error: b.error as SerializedError, ...item };
    }
    default:
      return null;
  }
}
