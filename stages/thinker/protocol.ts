/**
 * The Thinker's own part of the stage protocol: its `add` arguments, its stats section and the messages main sends
 * it (as `{type: 'kind', body}`). The worker loop and the engine carry these without reading them; main reads the
 * stats through the accessors here.
 */
import type { PromptPrefix } from '../../src/common/engine.ts';
import type { SerializedError } from '../../src/common/errors.ts';
import type { PrefixCacheStats as PrefixStats } from '../../src/sched/PrefixCache.ts';
import type { EcDrop, KindMessage, MainToStage, ThinkerMediaPlan } from '../../src/worker/messages.ts';
import { kindSectionOf } from '../kindStats.ts';
import { isFirstAudio, type FirstAudio } from '../requestEvents.ts';

export interface ThinkerArgs {
  /** The prompt as token ids (media placeholders expanded). */
  readonly promptTokenIds: readonly number[];
  /** For a request with media: the position map and which encoder sends each item. */
  readonly media?: ThinkerMediaPlan;
  /** EC-store copies to forget before taking this request's items (evicted, expired, refused). */
  readonly ecDrop?: readonly EcDrop[];
  /** First-packet hold (chunkPolicy.ts firstPacketHoldTokens): tokens to write before waiting for `first_audio`. */
  readonly firstPacketTokens?: number;
  /** The session key of a voice prefill and its answers (GenerateRequest.prefix). */
  readonly prefix?: PromptPrefix;
}

/** With an EC store: items taken from its own copies, from Redis, or lost; copies held. */
export interface ThinkerEcStats {
  readonly localTakes: number;
  readonly remoteTakes: number;
  readonly lostTakes: number;
  readonly copies: number;
  readonly copyBytes: number;
}

export interface ThinkerStats {
  /** With a prefix cache (engine.prefix_cache). */
  readonly prefix?: PrefixStats;
  readonly ec?: ThinkerEcStats;
}

/** A Thinker's stats section (empty for another kind's report, which has neither part). */
export const thinkerStatsOf = kindSectionOf<ThinkerStats>();

export type ThinkerMessage =
  /** Every stage of the request hears it (stages/requestEvents.ts): the Thinker ends its first-packet hold. */
  | FirstAudio
  /** Free the prompt prefix retained under `key` (its session closed or dropped the turn). */
  | { readonly type: 'release_prefix'; readonly key: string }
  /** The encoder instance `fromInstance` will not deliver this request's items (it died or refused them). */
  | { readonly type: 'media_failed'; readonly fromInstance: string; readonly error: SerializedError };

export const thinkerMessage = {
  releasePrefix: (key: string): MainToStage => ({ type: 'kind', body: { type: 'release_prefix', key } }),
  mediaFailed: (requestId: string, fromInstance: string, error: SerializedError): MainToStage =>
    kind(requestId, { type: 'media_failed', fromInstance, error }),
};

function kind(requestId: string, body: ThinkerMessage): KindMessage<ThinkerMessage> {
  return { type: 'kind', requestId, body };
}

/**
 * The body as a ThinkerMessage, or null when it is none (another kind's, or garbage from a foreign writer on a
 * remote channel: the control shapes check the envelope only, so the fields the Thinker reads are checked here).
 */
export function thinkerMessageOf(body: unknown): ThinkerMessage | null {
  if (isFirstAudio(body)) return { type: 'first_audio' };
  if (typeof body !== 'object' || body === null) return null;
  const b = body as Record<string, unknown>;
  switch (b.type) {
    case 'release_prefix':
      return typeof b.key === 'string' ? { type: 'release_prefix', key: b.key } : null;
    case 'media_failed':
      return typeof b.fromInstance === 'string' && typeof b.error === 'object' && b.error !== null
        ? { type: 'media_failed', fromInstance: b.fromInstance, error: b.error as SerializedError }
        : null;
    default:
      return null;
  }
}
