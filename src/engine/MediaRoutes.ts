/**
 * Main's side of a request's media: which encoder instance encodes which item (told to the Thinker in its `add`,
 * so it knows whom to wait for), sending each item's bytes to its encoder over the main -> encoder edge, and what
 * an encoder failure means for the request: with `on_failure: fail` the request ends with an error naming the
 * items; with `text_only` the Thinker is told to go on without them (it drops their spans and says so).
 */
import type { EncoderFailurePolicy } from '../common/graph.ts';
import { ErrorCodes, type SerializedError } from '../common/errors.ts';
import type { Logger } from '../common/log.ts';
import type { ChunkTransferAdapter } from '../../transport/adapter/ChunkTransferAdapter.ts';
import {
  EC_STORE,
  type EcItemPlan,
  type EncodeItem,
  type ThinkerMediaPlan,
  type UpstreamSource,
} from '../worker/messages.ts';
import { diagnostics } from '../common/diagnostics.ts';
import type { MediaBody } from '../common/payloads.ts';
import type { PreparedPrompt } from './mediaPrompt.ts';

interface EncoderRoute {
  readonly stageId: string;
  readonly onFailure: EncoderFailurePolicy;
  readonly whats: string[];
}

interface RequestRoutes {
  readonly thinker: string;
  readonly encoders: Map<string, EncoderRoute>;
}

export interface RequestMediaPlan {
  readonly thinker: ThinkerMediaPlan;
  /** Encoder instance -> the items it encodes. */
  readonly encode: ReadonlyMap<string, readonly EncodeItem[]>;
}

export type EncoderFailureOutcome =
  { readonly kind: 'fail'; readonly error: SerializedError } | { readonly kind: 'text_only'; readonly thinker: string };

export class MediaRoutes {
  private readonly routes = new Map<string, RequestRoutes>();

  constructor(
    private readonly log: Logger,
    private readonly chunkTimeoutMs = 30_000,
  ) {}

  /** The plans for the Thinker and each encoder; null for a request without media. */
  plan(
    requestId: string,
    prompt: PreparedPrompt,
    thinker: UpstreamSource,
    instanceOf: (stageId: string) => UpstreamSource,
    ec?: ReadonlyMap<number, EcItemPlan>,
  ): RequestMediaPlan | null {
    if (prompt.items.length === 0) return null;
    const encoders = new Map<string, EncoderRoute>();
    const encode = new Map<string, EncodeItem[]>();
    const items = prompt.items.map((item) => {
      const onFailure = item.encoder.encoder!.onFailure;
      const common = { modality: item.modality, numEmbeddings: item.numEmbeddings, what: item.what, onFailure };
      const itemEc = ec?.get(item.index);
      // An EC-store hit: the Thinker takes the rows from the store; no encoder is involved.
      if (itemEc?.contentKey !== undefined)
        return { ...common, from: { instance: EC_STORE, stageId: EC_STORE }, ec: itemEc };
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
    this.routes.set(requestId, { thinker: thinker.instance, encoders });
    return { thinker: { spans: prompt.spans, items }, encode };
  }

  /**
   * Sends every item's bytes to its encoder, in item order per encoder; the last one per encoder is final. Items
   * the EC store has (`plan.ec` hits) are not sent anywhere.
   */
  sendItems(
    requestId: string,
    prompt: PreparedPrompt,
    instanceOf: (stageId: string) => UpstreamSource,
    adapter: ChunkTransferAdapter,
    onError: (err: unknown) => void,
    ec?: ReadonlyMap<number, EcItemPlan>,
  ): void {
    const byEncoder = new Map<string, PreparedPrompt['items'][number][]>();
    for (const item of prompt.items) {
      if (ec?.get(item.index)?.contentKey !== undefined) continue;
      byEncoder.set(item.encoder.stageId, [...(byEncoder.get(item.encoder.stageId) ?? []), item]);
    }
    for (const [stageId, items] of byEncoder) {
      const to = instanceOf(stageId);
      items.forEach((item, k) => {
        const body = mediaBodyOf(item);
        diagnostics.encoderMedia.publish({ stage: stageId, bytes: body.bytes.byteLength });
        adapter
          .saveAsync(
            requestId,
            { toInstance: to.instance, toStageId: to.stageId, keyStage: to.stageId },
            { final: k === items.length - 1, body },
            Date.now() + this.chunkTimeoutMs,
          )
          .catch((err: unknown) => {
            this.log.warn(
              { requestId, to: to.instance, err: String(err) },
              'sending a media item to its encoder failed',
            );
            onError(err);
          });
      });
    }
  }

  /** What an encoder instance's failure means for the request (null: the request has no items there). */
  encoderFailed(requestId: string, instance: string, error: SerializedError): EncoderFailureOutcome | null {
    const routes = this.routes.get(requestId);
    const route = routes?.encoders.get(instance);
    if (!routes || !route) return null;
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

  forget(requestId: string): void {
    this.routes.delete(requestId);
  }
}

/** The chunk body that carries an item's bytes (as received) to its encoder; its bytesKeyOf keys the EC store. */
export function mediaBodyOf(item: PreparedPrompt['items'][number]): MediaBody {
  const part = item.part;
  return part.type === 'audio'
    ? {
        kind: 'media',
        item: item.index,
        format: part.format,
        ...(part.sampleRateHz !== undefined ? { sampleRateHz: part.sampleRateHz } : {}),
        what: item.what,
        bytes: part.data,
      }
    : { kind: 'media', item: item.index, format: 'image', what: item.what, bytes: part.data };
}
