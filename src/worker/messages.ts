/**
 * Every message that crosses the main <-> stage process boundary (the child_process IPC channel, and the Redis
 * control channels for instances on other hosts). Control only: tensors travel through the connector as frames;
 * these messages stay small.
 *
 * Each message is declared once, as a TypeBox schema with its values' bounds, and its TypeScript type is derived
 * from it (Static<>): the control guard (src/control/controlChecks.ts) checks what arrives against the same
 * declaration the senders are typed by. What a message carries for a kind (`add`'s args, a kind message's body, a
 * stats report's kind section) is the kind's (stages/<kind>/protocol.ts); the plans in those args are typed
 * below and checked by the kind's core.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { EncoderFailurePolicy, MediaModality } from '../common/encoderSettings.ts';
import type { StageGraph } from '../common/graph.ts';
import { SamplingParamsSchema } from '../common/samplingParams.ts';
import { SerializedErrorSchema } from '../common/errorSchema.ts';
import { ModelFactsSchema } from '../common/modelFacts.ts';
import type { MediaGrid } from '../common/modality.ts';
import {
  Count,
  DurationMs,
  EpochMs,
  InstanceName,
  List,
  LongText,
  PositiveCount,
  RequestId,
  ShortText,
  StageId,
} from '../common/wireValues.ts';
import { EdgeBindingSchema } from '../../transport/edges.ts';
import { StageStatsSchema } from './stageStats.ts';

export type { EdgeBinding } from '../../transport/edges.ts';
export type { ArStats, EdgeSample, KindStats, StageStats, StepPhase, StepSample } from './stageStats.ts';

const closed = { additionalProperties: false } as const;
/** `main`, an instance, or where a Thinker takes encoder rows from instead (EC_STORE). */
const Endpoint = Type.Union([Type.Literal('main'), Type.Literal('ec-store'), Type.Literal('kv-held'), InstanceName]);
const EndpointStage = Type.Union([Type.Literal('main'), Type.Literal('ec-store'), Type.Literal('kv-held'), StageId]);
/** Requests a stage may be told of in one message (a plan's lists). */
const MAX_PLAN_ITEMS = 1024;

/** What a stage process needs to boot: sent as its first IPC message. */
const BootSchema = Type.Object(
  {
    type: Type.Literal('boot'),
    /** The validated, frozen config (main loaded it; a stage host cannot publish on an instance's channel). */
    graph: Type.Unsafe<StageGraph>(Type.Object({})),
    stageIndex: Type.Integer({ minimum: 0, maximum: 1023 }),
    replica: Type.Integer({ minimum: 0, maximum: 1023 }),
    /** The instance id; default `${stageId}#${replica}` (instances that join from other machines name themselves). */
    instance: Type.Optional(InstanceName),
    edges: List(EdgeBindingSchema, 4096),
    /**
     * Remote instances: main's id for this boot, the same in its repeats. A boot with another id means a main has
     * booted the instance anew (it had lost it, after an outage, or main itself restarted) and holds none of the
     * requests the instance still has: the instance drops them (`drop_all`).
     */
    bootId: Type.Optional(ShortText),
  },
  closed,
);
export type StageBootArgs = Omit<Static<typeof BootSchema>, 'type'>;

const DownstreamTargetSchema = Type.Object(
  {
    instance: Endpoint, // "talker#0" or "main"
    stageId: EndpointStage, // "talker" or "main"
  },
  closed,
);
export type DownstreamTarget = Static<typeof DownstreamTargetSchema>;

const UpstreamSourceSchema = Type.Object(
  {
    instance: Endpoint, // "thinker#0", or "main" for an encoder (main sends it the media)
    stageId: EndpointStage,
    /** This stream's own deadlines (an encoder's timeout_ms); default: the request's firstChunkDeadline and
     * chunk_timeout_ms. */
    firstChunkDeadline: Type.Optional(EpochMs),
    chunkTimeoutMs: Type.Optional(DurationMs),
    /** The setting behind those deadlines, for the timeout error (an encoder's `stages[i].encoder.timeout_ms`). */
    timeoutSetting: Type.Optional(ShortText),
    /**
     * The producer's process on this host, for a stream on chunk_policy.chunk_timeout_ms: a deadline that passes while
     * it runs is renewed (transport/adapter/ChunkTransferAdapter.ts). Absent: a remote producer, the wall clock.
     */
    pid: Type.Optional(PositiveCount),
  },
  closed,
);
export type UpstreamSource = Static<typeof UpstreamSourceSchema>;

/** Where a media item's rows go in the Thinker's prompt (src/media/positionMap.ts MediaSpan). */
export interface MediaSpanPlan {
  readonly item: number;
  readonly modality: MediaModality;
  readonly placeholderIndex: number;
  readonly start: number;
  readonly length: number;
  /** The item's first row in this span (absent: 0): a video heard with its audio track has several spans. */
  readonly offset?: number;
  /** A video's time x height x width grid (its rows are in that order). */
  readonly grid?: MediaGrid;
}

/** One media item as the Thinker sees it: which encoder instance sends its rows, and what to do if it cannot. */
export interface ThinkerMediaItem {
  readonly modality: MediaModality;
  readonly numEmbeddings: number;
  /** Names the item in messages ("messages[0].content[1] (audio)"). */
  readonly what: string;
  /**
   * The encoder instance; `EC_STORE` when the rows come from the encoder-output store (ec.contentKey), `KV_HELD` when
   * none come (its positions' KV is in the Thinker's prefix cache).
   */
  readonly from: UpstreamSource;
  readonly onFailure: EncoderFailurePolicy;
  /** With an EC store (ec_store:): how this item relates to it. */
  readonly ec?: EcItemPlan;
  /**
   * A video's block key (src/engine/blockKey.ts): the prefix cache names its positions by it and their
   * offset, not by its rows (src/sched/blockNames.ts writeMediaKey).
   */
  readonly blockKey?: string;
}

/** `from` of an item whose rows the Thinker takes from the EC store instead of an encoder. */
export const EC_STORE = 'ec-store';

/**
 * `from` of an item main did not encode: the Thinker's prefix cache was known to hold the KV of all its positions
 * (named by its block key). A Thinker that does not adopt them asks for its encode (CHORUS_ERR_KV_NOT_HELD).
 */
export const KV_HELD = 'kv-held';

export interface EcItemPlan {
  /** Main's index key of the item (encoder identity + hash of the bytes as received): sent back in `ec_stored`. */
  readonly itemKey: string;
  /** A hit: the rows are in the store under this content key (this instance's own copy, else Redis). */
  readonly contentKey?: string;
  /** With Redis: where this run of the store keeps rows there (`{key_prefix}:ec:{run}`). */
  readonly namespace?: string;
}

/** An entry a Thinker instance must forget (main's index evicted it); `seq` guards a copy kept again since. */
export interface EcDrop {
  readonly contentKey: string;
  readonly seq: number;
}

export interface ThinkerMediaPlan {
  /** In prompt order; spans[k].item indexes items. */
  readonly spans: readonly MediaSpanPlan[];
  readonly items: readonly ThinkerMediaItem[];
}

/** One media item as its encoder sees it: its bytes follow as a `media` chunk from main (body.item = item). */
export interface EncodeItem {
  readonly item: number;
  readonly modality: MediaModality;
  /** Promised to the Thinker (main probed it): the encoder must produce exactly this many rows. */
  readonly numEmbeddings: number;
  readonly what: string;
}

/**
 * What main tells a stage instance when it admits a request: the fields every kind reads, and `args`, the kind's own
 * arguments (a prompt, a media plan, the items to encode, a playback plan...). `args` is typed and built by the
 * kind's descriptor (stages/<kind>/protocol.ts and descriptor.ts `addArgs`): the worker loop and the engine carry
 * it without reading it, so a new kind adds its arguments without touching either.
 */
const AddSchema = Type.Object(
  {
    type: Type.Literal('add'),
    requestId: RequestId,
    sampling: SamplingParamsSchema,
    /** Where this request's chunks go: next stages it needs ([] when none) and, for final-output stages, main. */
    downstream: List(DownstreamTargetSchema, 64),
    /**
     * The upstream instances to receive from: none for a text-only Thinker, one per encoder used for a Thinker with
     * media.
     */
    upstreams: List(UpstreamSourceSchema, MAX_PLAN_ITEMS),
    /** Absolute deadline for the first input chunk (downstream stages). */
    firstChunkDeadline: EpochMs,
    /**
     * When main admitted the request (epoch ms, main's clock; its adds go out in the same turn): a stage whose input
     * comes later measures from it how long a newcomer's input takes (src/sched/DecodeStepCost.ts,
     * NewcomerPrefillCost). Absent: the add's arrival.
     */
    admittedAtMs: Type.Optional(EpochMs),
    /**
     * Requests live in the engine when this one was admitted (paused ones are not load): the load a stage's
     * scheduler can size by before it sees the others (the Talker's dynamic initial chunk: a burst's first request
     * must not get the unloaded chunk just because the Talker has not seen the rest yet).
     */
    liveRequests: Type.Optional(Count),
    /**
     * W3C trace context of the request's root span (GenerateRequest.traceparent): the stage's spans for the request
     * join its trace, on this host or another (it rides the Redis control channel as it does IPC). Absent: untraced.
     */
    traceparent: Type.Optional(Type.String({ maxLength: 256 })),
    /**
     * The request's cache partition (PreparedPrompt.cacheSalt, a digest): prefix-cache blocks are named from the root
     * salted with it and encoder outputs keyed with it, so requests of two salts share neither. Absent: the default.
     */
    cacheSalt: Type.Optional(ShortText),
    /** The kind's own arguments (an object; the kind's core checks what it reads of them). */
    args: Type.Object({}),
  },
  closed,
);
export type AddRequest<A = unknown> = Omit<Static<typeof AddSchema>, 'args'> & { readonly args: A };

export interface PlaybackPlan {
  /**
   * Epoch ms by which the first audio packet is due at main: admission + the request's TTFP target, or + the
   * default first-packet slack when it has none.
   */
  readonly firstPacketDeadlineMs: number;
  /** The request's TTFP target (ms) when it has one: the Talker then sizes the first chunk to meet it. */
  readonly ttfpTargetMs: number | null;
  /** Audio one codec frame plays, ms. */
  readonly frameMs: number;
  /** Recently measured time from the Talker sending a chunk to its audio reaching main (a Code2Wav step), ms. */
  readonly downstreamMs: number;
}

/** The `add` arguments of a stage whose output a listener plays (Code2Wav, tts; the Talker's include them). */
export interface PlaybackArgs {
  /** Requests with audio out: what it schedules the audio by (src/sched/playback.ts). */
  readonly playback?: PlaybackPlan;
}

const KindMessageSchema = Type.Object(
  { type: Type.Literal('kind'), requestId: Type.Optional(RequestId), body: Type.Object({}) },
  closed,
);
/**
 * A message of the stage's kind, handed to its core (StageCore.onKindMessage) unread: the kind's protocol
 * (stages/<kind>/protocol.ts) types and checks `body`. The Thinker's first_audio, media_failed and
 * release_prefix travel so. With a requestId, a core failing on it fails that request (StageLoop).
 */
export type KindMessage<B = unknown> = Omit<Static<typeof KindMessageSchema>, 'body'> & { readonly body: B };

/**
 * What main may send a stage, by type: the guard checks a message against the schema of its type. `drop_all` is
 * not here on purpose: the instance's own channel injects it, main never sends it, so one arriving is foreign.
 */
export const MAIN_TO_STAGE_SCHEMAS = {
  /** The first message a stage process receives. */
  boot: BootSchema,
  add: AddSchema,
  abort: Type.Object({ type: Type.Literal('abort'), requestId: RequestId, reason: LongText }, closed),
  pause: Type.Object({ type: Type.Literal('pause'), requestId: RequestId }, closed),
  resume: Type.Object({ type: Type.Literal('resume'), requestId: RequestId }, closed),
  kind: KindMessageSchema,
  /** Finish in-flight work (up to drainMs), then exit 0. */
  shutdown: Type.Object({ type: Type.Literal('shutdown'), drainMs: DurationMs }, closed),
};

export type MainToStage =
  | Exclude<Static<(typeof MAIN_TO_STAGE_SCHEMAS)[keyof typeof MAIN_TO_STAGE_SCHEMAS]>, { type: 'add' | 'kind' }>
  | AddRequest
  | KindMessage
  /**
   * Drop every request held, silently: main booted this (remote) instance anew and knows none of them (it failed
   * them when it lost the instance). Injected by the instance's channel, never sent by main.
   */
  | { readonly type: 'drop_all'; readonly reason: string };

const StageReadySettingsSchema = Type.Object(
  {
    stageId: StageId,
    replica: Type.Integer({ minimum: 0, maximum: 1023 }),
    pid: PositiveCount,
    threads: Type.Integer({ minimum: 1, maximum: 1024 }),
    modelFiles: List(Type.String({ maxLength: 4096 }), 256),
    loadMs: DurationMs,
    /** Of loadMs, the models it built (first use): a restart finds them built (its /health readyInMs leaves it out). */
    buildMs: Type.Optional(DurationMs),
    /** What the loaded model is (the engine and server read these instead of guessing from the config). */
    facts: ModelFactsSchema,
  },
  closed,
);
export type StageReadySettings = Static<typeof StageReadySettingsSchema>;

/** What a stage may send main, by type (the guard checks each against its type's schema). */
export const STAGE_TO_MAIN_SCHEMAS = {
  ready: Type.Object({ type: Type.Literal('ready'), settings: StageReadySettingsSchema }, closed),
  boot_failed: Type.Object({ type: Type.Literal('boot_failed'), error: SerializedErrorSchema }, closed),
  /** The request is done in this stage (its last chunk, flagged final, has been put). */
  finished: Type.Object(
    {
      type: Type.Literal('finished'),
      requestId: RequestId,
      finishReason: Type.Union([
        Type.Literal('stop'),
        Type.Literal('length'),
        Type.Literal('cancelled'),
        Type.Literal('error'),
      ]),
      numTokens: Count,
      error: Type.Optional(SerializedErrorSchema),
      /** Thinker: what the answer left out (a media item dropped under on_encoder_failure: text_only). */
      warnings: Type.Optional(List(LongText, MAX_PLAN_ITEMS)), // one per media item at most
    },
    closed,
  ),
  stats: Type.Object({ type: Type.Literal('stats'), stats: StageStatsSchema }, closed),
  /** Thinker: it keeps an item's rows (in-process copy `seq`, and in Redis when `remote`) for the EC store. */
  ec_stored: Type.Object(
    {
      type: Type.Literal('ec_stored'),
      requestId: RequestId,
      itemKey: ShortText,
      contentKey: ShortText,
      bytes: Count,
      seq: Count,
      remote: Type.Boolean(),
    },
    closed,
  ),
  /** Thinker: it let go of a request's media rows once prefilled (main's budget of rows held drops by `bytes`). */
  media_released: Type.Object({ type: Type.Literal('media_released'), requestId: RequestId, bytes: Count }, closed),
  /**
   * Thinker: item `item`'s encode failed for memory or time, or its encoder-output store entry was lost
   * (src/engine/requests/reencode.ts codes); it waits at the item while main encodes it again (a new run of the
   * request) or tells it the item failed for good (`media_failed` with `item`).
   */
  media_retry: Type.Object(
    { type: Type.Literal('media_retry'), requestId: RequestId, item: Count, error: SerializedErrorSchema },
    closed,
  ),
  drained: Type.Object({ type: Type.Literal('drained') }, closed),
};

export type StageToMain = Static<(typeof STAGE_TO_MAIN_SCHEMAS)[keyof typeof STAGE_TO_MAIN_SCHEMAS]>;

export { MAX_CONTROL_MESSAGE_BYTES } from './ControlChannel.ts';
