/**
 * Main's side of a request's media: which encoder instance encodes which item (told to the Thinker in its `add`,
 * so it knows whom to wait for), sending each item's bytes to its encoder over the main -> encoder edge, and what
 * an encoder failure means for the request: with `on_failure: fail` the request ends with an error naming the
 * items; with `text_only` the Thinker is told to go on without them (it drops their spans and says so).
 */
import { modalityOf } from '../media/modalities/index.ts';
import type { EncoderFailurePolicy, MediaModality } from '../common/encoderSettings.ts';
import { ErrorCodes, type SerializedError } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { ChunkTransferAdapter } from '../../transport/registry.ts';
import {
  EC_STORE,
  KV_HELD,
  type EcItemPlan,
  type EncodeItem,
  type ThinkerMediaPlan,
  type UpstreamSource,
} from '../worker/messages.ts';
import { diagnostics } from '../common/diagnostics.ts';
import { blockKeyOf } from './blockKey.ts';
import type { MediaBody } from '../common/payloads.ts';
import type { MediaItem, PreparedPrompt } from './mediaPrompt.ts';

interface EncoderRoute {
  readonly stageId: string;
  readonly onFailure: EncoderFailurePolicy;
  readonly whats: string[];
}

/** Which encoder instance has which of a request's items, and its Thinker: what an encoder failure costs. */
export interface EncoderRoutes {
  readonly thinker: string;
  readonly encoders: ReadonlyMap<string, EncoderRoute>;
}

export interface RequestMediaPlan {
  readonly thinker: ThinkerMediaPlan;
  /** Encoder instance -> the items it encodes. */
  readonly encode: ReadonlyMap<string, readonly EncodeItem[]>;
}

/** The bytes main sends one encoder instance, in item order (the last one is the final chunk). */
export interface MediaSend {
  readonly to: UpstreamSource;
  readonly items: readonly MediaItem[];
}

/** A request's media as admitted: the plans in the adds, the routes its record keeps, and the sends. */
export interface MediaRouting {
  readonly plan: RequestMediaPlan;
  readonly routes: EncoderRoutes;
  readonly sends: readonly MediaSend[];
  /** The modality of each item not encoded because its Thinker holds its positions' KV (heldItems.ts). */
  readonly skipped: readonly MediaModality[];
}

export type EncoderFailureOutcome =
  { readonly kind: 'fail'; readonly error: SerializedError } | { readonly kind: 'text_only'; readonly thinker: string };

/**
 * The plans for the Thinker and each encoder, and what to send where; null for a request without media. Items the
 * EC store has (`ec` hits) come from the store, and those whose KV the Thinker holds (`held`) from nowhere: no
 * encoder sees them.
 */
export function planMedia(
  prompt: PreparedPrompt,
  thinker: UpstreamSource,
  instanceOf: (stageId: string) => UpstreamSource,
  ec?: ReadonlyMap<number, EcItemPlan>,
  held: ReadonlySet<number> = new Set(),
): MediaRouting | null {
  if (prompt.items.length === 0) return null;
  const encoders = new Map<string, EncoderRoute>();
  const encode = new Map<string, EncodeItem[]>();
  const items = prompt.items.map((item) => {
    const onFailure = item.encoder.encoder!.onFailure;
    const blockKey = blockKeyOf(item);
    const common = {
      modality: item.modality,
      numEmbeddings: item.numEmbeddings,
      what: item.what,
      onFailure,
      ...(blockKey === undefined ? {} : { blockKey }),
    };
    const itemEc = ec?.get(item.index);
    // An EC-store hit: the Thinker takes the rows from the store; no encoder is involved.
    if (itemEc?.contentKey !== undefined)
      return { ...common, from: { instance: EC_STORE, stageId: EC_STORE }, ec: itemEc };
    if (held.has(item.index)) return { ...common, from: { instance: KV_HELD, stageId: KV_HELD } };
    const from = instanceOf(item.encoder.stageId);
    const route = encoders.get(from.instance) ?? { stageId: from.stageId, onFailure, whats: [] };
    route.whats.push(item.what);
    encoders.set(from.instance, route);
    encode.set(from.instance, [
      ...(encode.get(from.instance) ?? []),
      { item: item.index, modality: item.modality, numEmbeddings: item.numEmbeddings, what: item.what },
    ]);
    return { ...common, from, ...(itemEc ? { ec: itemEc } : {}) };
  });
  const plan = { thinker: { spans: prompt.spans, items }, encode };
  const skipped = prompt.items.filter((i) => held.has(i.index)).map((i) => i.modality);
  const routes = { thinker: thinker.instance, encoders };
  return { plan, routes, sends: mediaSends(prompt, instanceOf, ec, held), skipped };
}

/** Every item the store does not have and the Thinker does not hold, grouped by its encoder, in item order. */
function mediaSends(
  prompt: PreparedPrompt,
  instanceOf: (stageId: string) => UpstreamSource,
  ec: ReadonlyMap<number, EcItemPlan> | undefined,
  held: ReadonlySet<number>,
): MediaSend[] {
  const byEncoder = new Map<string, MediaItem[]>();
  for (const item of prompt.items) {
    if (ec?.get(item.index)?.contentKey !== undefined || held.has(item.index)) continue;
    byEncoder.set(item.encoder.stageId, [...(byEncoder.get(item.encoder.stageId) ?? []), item]);
  }
  return [...byEncoder].map(([stageId, items]) => ({ to: instanceOf(stageId), items }));
}

/**
 * Sends every item's bytes to its encoder (and counts the items not encoded); a send that fails calls onError (the
 * request fails).
 */
export function sendMedia(
  requestId: string,
  { sends, skipped }: Pick<MediaRouting, 'sends' | 'skipped'>,
  adapter: ChunkTransferAdapter,
  { chunkTimeoutMs, log }: { readonly chunkTimeoutMs: number; readonly log: Logger },
  onError: (err: unknown) => void,
): void {
  for (const modality of skipped) diagnostics.mediaEncodeSkipped.publish({ modality });
  for (const { to, items } of sends) {
    items.forEach((item, k) => {
      const body = mediaBodyOf(item);
      diagnostics.encoderMedia.publish({ stage: to.stageId, bytes: body.bytes.byteLength });
      adapter
        .saveAsync(
          requestId,
          { toInstance: to.instance, toStageId: to.stageId, keyStage: to.stageId },
          { final: k === items.length - 1, body },
          Date.now() + chunkTimeoutMs,
        )
        .catch((err: unknown) => {
          log.warn({ requestId, to: to.instance, err: String(err) }, 'sending a media item to its encoder failed');
          onError(err);
        });
    });
  }
}

/** What an encoder instance's failure means for the request (null: the request has no items there). */
export function encoderFailure(
  routes: EncoderRoutes,
  instance: string,
  error: SerializedError,
): EncoderFailureOutcome | null {
  const route = routes.encoders.get(instance);
  if (!route) return null;
  if (route.onFailure === 'text_only') return { kind: 'text_only', thinker: routes.thinker };
  return {
    kind: 'fail',
    error: {
      code: ErrorCodes.ENCODER_FAILED,
      message:
        `${route.whats.join(', ')}: encoder stage ${instance} could not encode (${error.code}: ` +
        `${error.message}); retry, or set on_encoder_failure: text_only to answer without the media`,
    },
  };
}

/** The chunk body that carries an item to its encoder (its modality's `body`); its bytesKey keys the EC store. */
export function mediaBodyOf(item: MediaItem): MediaBody {
  return modalityOf(item.part).body(item.part, item.index, item.what);
}
