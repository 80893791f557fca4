/**
 * Every message that crosses the main <-> stage process boundary (the child_process IPC channel). Control only:
 * tensors travel through the connector as frames; these messages stay small.
 */
import type { EncoderFailurePolicy, MediaModality, SamplingParams, StageGraph } from '../common/graph.ts';
import type { SerializedError } from '../common/errors.ts';
import type { ModelFacts } from '../common/modelFacts.ts';
import type { FinishReason } from '../common/engine.ts';

import type { EdgeBinding } from '../../transport/edges.ts';

export type { EdgeBinding };

/** What a stage process needs to boot: sent as its first IPC message. */
export interface StageBootArgs {
  readonly graph: StageGraph;
  readonly stageIndex: number;
  readonly replica: number;
  /** The instance id; default `${stageId}#${replica}` (instances that join from other machines name themselves). */
  readonly instance?: string;
  readonly edges: readonly EdgeBinding[];
  /**
   * Remote instances: main's id for this boot, the same in its repeats. A boot with another id means a main has
   * booted the instance anew (it had lost it, after an outage, or main itself restarted) and holds none of the
   * requests the instance still has: the instance drops them (`drop_all`).
   */
  readonly bootId?: string;
}

export interface DownstreamTarget {
  readonly instance: string; // "talker#0" or "main"
  readonly stageId: string; // "talker" or "main"
}

export interface UpstreamSource {
  readonly instance: string; // "thinker#0", or "main" for an encoder (main sends it the media)
  readonly stageId: string;
  /** This stream's own deadlines (an ' +
    'encoder's timeout_ms); default: the request's firstChunkDeadline and chunk_timeout_ms. */
  readonly firstChunkDeadline?: number;
  readonly chunkTimeoutMs?: number;
  /** The setting behind those deadlines, for the timeout error (an encoder's `stages[i].encoder.timeout_ms`). */
  readonly timeoutSetting?: string;
}

/** Where a media item's rows go in the Thinker's prompt (src/media/positionMap.ts MediaSpan). */
export interface MediaSpanPlan {
  readonly item: number;
  readonly modality: MediaModality;
  readonly placeholderIndex: number;
  readonly start: number;
  readonly length: number;
}

/** One media item as the Thinker sees it: which encoder instance sends its rows, and what to do if it cannot. */
export interface ThinkerMediaItem {
  readonly modality: MediaModality;
  readonly numEmbeddings: number;
  /** Names the item in messages ("messages[0].content[1] (audio)"). */
  readonly what: string;
  /** The encoder instance; `EC_STORE` when the rows come from the encoder-output store (ec.contentKey). */
  readonly from: UpstreamSource;
  readonly onFailure: EncoderFailurePolicy;
  /** With an EC store (ec_store:): how this item relates to it. */
  readonly ec?: EcItemPlan;
}

/** `from` of an item whose rows the Thinker takes from the EC store instead of an encoder. */
export const EC_STORE = 'ec-store';

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
export interface AddRequest<A = unknown> {
  readonly type: 'add';
  readonly requestId: string;
  readonly sampling: SamplingParams;
  /** Where this request's chunks go: next stages it needs ([] when none) and, for final-output stages, main. */
  readonly downstream: readonly DownstreamTarget[];
  /**
   * The upstream instances to receive from: none for a text-only Thinker, one per encoder used for a Thinker with
   * media.
   */
  readonly upstreams: readonly UpstreamSource[];
  /** Absolute deadline for the first input chunk (downstream stages). */
  readonly firstChunkDeadline: number;
  /**
   * Requests live in the engine when this one was admitted (paused ones are not load): the load a stage's
   * scheduler can size by before it sees the others (the Talker's dynamic initial chunk: a burst's first request
   * must not get the unloaded chunk just because the Talker has not seen the rest yet).
   */
  readonly liveRequests?: number;
  /**
   * W3C trace context of the request's root span (GenerateRequest.traceparent): the stage's spans for the request
   * join its trace, on this host or another (it rides the Redis control channel as it does IPC). Absent: untraced.
   */
  readonly traceparent?: string;
  /**
   * The request's cache partition (PreparedPrompt.cacheSalt, a digest): prefix-cache blocks are named from the root
   * salted with it and encoder outputs keyed with it, so requests of two salts share neither. Absent: the default.
   */
  readonly cacheSalt?: string;
  /** The kind's own arguments. */
  readonly args: A;
}

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

export type MainToStage =
  /** The first message a stage process receives. */
  | ({ readonly type: 'boot' } & StageBootArgs)
  | AddRequest
  | { readonly type: 'abort'; readonly requestId: string; readonly reason: string }
  | { readonly type: 'pause'; readonly requestId: string }
  | { readonly type: 'resume'; readonly requestId: string }
  /**
   * A message of the stage's kind, handed to its core (StageCore.onKindMessage) unread: the kind's protocol
   * (stages/<kind>/protocol.ts) types and checks `body`. The Thinker's first_audio, media_failed and
   * release_prefix travel so. With a requestId, a core failing on it fails that request (StageLoop).
   */
  | KindMessage
  /**
   * Drop every request held, silently: main booted this (remote) instance anew and knows none of them (it failed
   * them when it lost the instance). Injected by the instance's channel, never sent by main.
   */
  | { readonly type: 'drop_all'; readonly reason: string }
  /** Finish in-flight work (up to drainMs), then exit 0. */
  | { readonly type: 'shutdown'; readonly drainMs: number };

export interface KindMessage<B = unknown> {
  readonly type: 'kind';
  readonly requestId?: string;
  readonly body: B;
}

export interface StageReadySettings {
  readonly stageId: string;
  readonly replica: number;
  readonly pid: number;
  readonly threads: number;
  readonly modelFiles: readonly string[];
  readonly loadMs: number;
  /** What the loaded model is (the engine and server read these instead of guessing from the config). */
  readonly facts: ModelFacts;
}

export interface EdgeSample {
  readonly from: string; // producing stage id
  readonly to: string; // consuming stage id, or "main"
  readonly latencyMs: number; // saved by the producer -> received by the consumer (same wall clock, one machine)
  readonly bytes: number;
}

/**
 * What a step did: prefill (it computed prompt positions: a new prompt, its chunks, or a recompute after preemption),
 * decode (every sequence in it computed the one position of its last output), or run (a stage that is not
 * autoregressive: an encoder, Code2Wav).
 */
export type StepPhase = 'prefill' | 'decode' | 'run';

export interface StepSample {
  readonly phase: StepPhase;
  readonly ms: number;
}

/** Autoregressive stages (Thinker, Talker): totals since the process started, and the KV held now. */
export interface ArStats {
  /** Prompt positions computed (positions taken from the prefix cache are not: PrefixStats counts those). */
  readonly promptTokens: number;
  /** Outputs sampled: the Thinker's text tokens, the Talker's codec frames. */
  readonly generatedTokens: number;
  /** KV held by the requests in the scheduler now, and its budget (engine.kv_cache_bytes). */
  readonly kvUsedBytes: number;
  readonly kvBudgetBytes: number;
}

export interface StageStats {
  readonly queueDepth: number; // requests waiting (not yet running)
  readonly running: number;
  readonly batchSize: number; // of the last step
  readonly stepMs: number;
  /** Since the previous report (bounded): batch size of every step, and received chunks. */
  readonly batchSizes: readonly number[];
  readonly edgeSamples: readonly EdgeSample[];
  /** Since the previous report (bounded, like batchSizes): every step's duration and phase. */
  readonly steps?: readonly StepSample[];
  /** The autoregressive stages (ArStageCore: Thinker, Talker). */
  readonly ar?: ArStats;
  /**
   * The kind's own section (its encoder cache, prefix cache, vocoder states...): typed by the kind's protocol
   * (stages/<kind>/protocol.ts), read on main through that protocol's accessors.
   */
  readonly kind?: KindStats;
}

/** A kind's stats section on the wire: named parts (`prefix`, `encoder`...), each typed by the kind that sends it. */
export type KindStats = object;

export type StageToMain =
  | { readonly type: 'ready'; readonly settings: StageReadySettings }
  | { readonly type: 'boot_failed'; readonly error: SerializedError }
  /** The request is done in this stage (its last chunk, flagged final, has been put). */
  | {
      readonly type: 'finished';
      readonly requestId: string;
      readonly finishReason: FinishReason;
      readonly numTokens: number;
      readonly error?: SerializedError;
      /** Thinker: what the answer left out (a media item dropped under on_encoder_failure: text_only). */
      readonly warnings?: readonly string[];
    }
  | { readonly type: 'stats'; readonly stats: StageStats }
  /** Thinker: it keeps an item's rows (in-process copy `seq`, and in Redis when `remote`) for the EC store. */
  | {
      readonly type: 'ec_stored';
      readonly requestId: string;
      readonly itemKey: string;
      readonly contentKey: string;
      readonly bytes: number;
      readonly seq: number;
      readonly remote: boolean;
    }
  | { readonly type: 'drained' };

export { MAX_CONTROL_MESSAGE_BYTES } from './ControlChannel.ts';
