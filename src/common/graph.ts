/**
 * The resolved, validated, defaulted and frozen stage graph. src/config/loadConfig.ts produces it from YAML;
 * everything downstream reads only this shape (snake_case in YAML, camelCase here).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Count, List } from './wireValues.ts';
import type { Modality } from './modality.ts';

/**
 * A stage kind's name: a key of the kind registry (stages/registry.ts), which the floor cannot read; the config
 * accepts only the names registered there, so a new kind is its folder and its registry line, not a name here.
 */
export type StageKind = string;

/** The instance and stage id main goes by on edges, in downstream targets and in chunk keys. */
export const MAIN = 'main';
export type WorkerType = 'ar' | 'generation';
export type ConnectorKind = 'shm' | 'inproc' | 'redis';
export type FinalOutputType = 'text' | 'audio';
/** fifo: oldest first, every ready request in every step. playback: least slack first (src/sched/playback.ts). */
export type SchedulingPolicy = 'playback' | 'fifo';

export interface ConnectorSpec {
  readonly name: string;
  readonly kind: ConnectorKind;
  /** shm: ringBytes (capacity of each edge ring). redis: url, password, ttlSeconds, poolSize. */
  readonly options: Readonly<Record<string, unknown>>;
}

/** A request's sampling knobs (main builds them from a validated request and the config; sent in `add`). */
export const SamplingParamsSchema = Type.Object(
  {
    temperature: Type.Number({ minimum: 0 }), // 0 = greedy
    topK: Count, // 0 = off
    topP: Type.Number({ minimum: 0, maximum: 1 }), // 1 = off
    repetitionPenalty: Type.Number({ exclusiveMinimum: 0 }), // 1 = off
    /** OpenAI's: logit -= frequencyPenalty * (times the token was generated) (0 = off, -2..2). */
    frequencyPenalty: Type.Number({ minimum: -2, maximum: 2 }),
    /** OpenAI's: logit -= presencePenalty once the token has been generated (0 = off, -2..2). */
    presencePenalty: Type.Number({ minimum: -2, maximum: 2 }),
    /** OpenAI's logit_bias: token id -> added to its logit (-100 bans it, 100 forces it). */
    logitBias: Type.Unsafe<Readonly<Record<string, number>>>(
      Type.Record(Type.String({ pattern: '^[0-9]+$' }), Type.Number({ minimum: -100, maximum: 100 }), {
        additionalProperties: false,
        maxProperties: 4096,
      }),
    ),
    seed: Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }),
    maxTokens: Count,
    stopTokenIds: List(Count, 4096),
    ignoreEos: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type SamplingParams = Readonly<Static<typeof SamplingParamsSchema>>;

/** Greedy decoding with every knob off: the base callers override (warm-up runs, benches, test stages). */
export const GREEDY_SAMPLING: SamplingParams = Object.freeze({
  temperature: 0,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: Object.freeze({}),
  seed: 0,
  maxTokens: 1,
  stopTokenIds: Object.freeze([]),
  ignoreEos: false,
});

/** Sizes of a generated model. Which fields apply depends on the stage kind. */
export interface ThinkerSize {
  readonly vocabSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  readonly maxPositions: number;
  /** The layer whose output is sent to the Talker as "accept" hidden states (0-based, < numLayers). */
  readonly acceptLayer: number;
  /** Scale of the output head, large enough that greedy choices are never near-ties under float noise. */
  readonly logitScale: number;
}

export interface TalkerSize {
  readonly codebookSize: number; // codebook-0 vocabulary, excluding the special tokens (bos, eos)
  readonly numCodebooks: number; // 16
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  readonly maxPositions: number;
  readonly framesPerToken: number; // codec frames generated per Thinker text token
  /**
   * Width of one conditioning row from the Thinker: thinker embed + accept hidden (derived, 2 * thinker hiddenSize).
   */
  readonly conditionDim: number;
  readonly logitScale: number;
}

export interface Code2WavSize {
  readonly numCodebooks: number;
  readonly codebookSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly kernelSize: number;
  readonly samplesPerFrame: number; // 1920 at 24 kHz = 12.5 frames/s
  readonly sampleRateHz: number; // 24000
  /**
   * Build the streaming variant (causal-conv state in and out, so each frame is decoded once) instead of the
   * stateless graph that needs its receptive field re-sent as left context with every chunk.
   */
  readonly streamingState: boolean;
}

/**
 * Sizes of the generated tiny-omni encoders. outputSize is the Thinker's hiddenSize: encoder rows are spliced
 * into the Thinker's inputs_embeds, so the two must agree; the loader derives it from the downstream Thinker.
 */
export interface AudioEncoderSize {
  /** Mel bins of the input features (80, as Whisper's front end). */
  readonly numMelBins: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export interface VisionEncoderSize {
  /** Side of a square patch in pixels (14, as CLIP ViT-L/14 and Qwen2-VL). */
  readonly patchSize: number;
  /** mergeSize x mergeSize neighbouring patches become one embedding (2, as Qwen2-VL). */
  readonly mergeSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly intermediateSize: number;
  /** Width of one output embedding = the Thinker's hiddenSize. */
  readonly outputSize: number;
}

export type EncoderSize = AudioEncoderSize | VisionEncoderSize;
export type EncoderModelKind = 'audio_encoder' | 'vision_encoder';

export type GeneratedModelSpec =
  | {
      readonly source: 'generated';
      readonly kind: 'thinker';
      readonly preset: string;
      readonly seed: number;
      readonly size: ThinkerSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'talker';
      readonly preset: string;
      readonly seed: number;
      readonly size: TalkerSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'code2wav';
      readonly preset: string;
      readonly seed: number;
      readonly size: Code2WavSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'audio_encoder';
      readonly preset: string;
      readonly seed: number;
      readonly size: AudioEncoderSize;
    }
  | {
      readonly source: 'generated';
      readonly kind: 'vision_encoder';
      readonly preset: string;
      readonly seed: number;
      readonly size: VisionEncoderSize;
    };

export interface FileModelSpec {
  readonly source: 'file';
  /** Absolute path of the ONNX file (resolved against the YAML file's folder). */
  readonly path: string;
  /** Folder with tokenizer.json (+ tokenizer_config.json), absolute; Thinker only. */
  readonly tokenizer?: string;
  /**
   * The GGUF file this model is imported from (YAML `model: {gguf: ...}`, Thinker only): `path` and `tokenizer` then
   * name its folder in the model cache, which loadConfig (or ensureModel) fills on first use.
   */
  readonly gguf?: string;
}

export type ModelSpec = GeneratedModelSpec | FileModelSpec;

export interface EngineArgs {
  readonly maxNumSeqs: number;
  readonly maxNumBatchedTokens: number;
  /**
   * AR stages: a step that admits whole prompts runs them alone, ahead of the running decodes (src/sched/
   * ArScheduler.ts); absent: on.
   */
  readonly prefillFirst?: boolean;
  /**
   * AR stages: with more requests than seats, steps a request holds its seat before yielding it (keeping its KV) to
   * the one that has waited longest (src/sched/ArScheduler.ts, seat turns); null: it holds it until it finishes.
   * Absent on the other stages.
   */
  readonly seatTurnSteps?: number | null;
  /**
   * AR stages: positions one request computes in a step at most (vLLM's long_prefill_token_threshold), so a long
   * prefill (a clip's rows) takes several short steps and the requests beside it wait for one short step, not a step
   * of the whole budget (src/sched/ArScheduler.ts); absent: the step's budget.
   */
  readonly longPrefillTokenThreshold?: number;
  /**
   * The Thinker only: the baseline of seed 000's experiment (bench/video). true: no step runs while any admitted
   * request still waits for media rows, as an engine that encodes on its own path stalls every request in the batch
   * during an encode; absent or false: encoding is asynchronous (text and other requests prefill meanwhile).
   */
  readonly syncEncoding?: boolean;
  /**
   * The Thinker only: bytes of encoded media rows an instance may hold for the requests admitted to it
   * (src/engine/MediaRowsBudget.ts); over it a request waits for room, or is refused when its rows alone exceed it.
   */
  readonly mediaRowsBytes?: number;
  readonly threads: number; // onnxruntime intra-op threads for this stage's sessions
  /**
   * Nice levels this stage's processes run below the other stages (added to the graph's stageNice; 0 or absent: none).
   * An encoder below the Thinker: on cores the two share, the Thinker's steps (every request's tokens) take the CPU
   * first and the encodes, which run off their path, take what is left (docs/video.md). A video's decoder child in
   * main runs at its encoder's level.
   */
  readonly nice?: number;
  readonly kvCacheBytes: number; // KV byte budget; exceeding it preempts (AR stages)
  /** AR stages: the prefix cache (src/sched/PrefixCache.ts), beside the KV budget; null: off (or not an AR stage). */
  readonly prefixCache: PrefixCacheSettings | null;
  /**
   * Requests lost with an instance of this stage (died, hung, lost over Redis) are replayed on a live instance
   * (src/engine/requests/migration.ts); null or absent: off, they fail with the stage's error.
   */
  readonly migration?: MigrationSettings | null;
  /**
   * Cores this stage's processes run on, and keep to themselves: main and the stages without `cpus` run on the
   * cores no stage reserved (src/common/affinity.ts). Unset: wherever the OS puts it.
   */
  readonly cpus?: readonly number[];
}

export interface MigrationSettings {
  /** Replays one request may take, whatever stage lost it. */
  readonly maxAttempts: number;
  /** A request whose answer is longer than this many tokens when lost is not replayed (the replay redoes them). */
  readonly maxReplayTokens: number;
  /**
   * How long a request lost with an instance of this stage waits for a ready instance of every stage it runs on
   * (a restart, a replacement joining, another replica) before it fails; null: chunk_policy.chunk_timeout_ms.
   */
  readonly maxWaitMs: number | null;
}

export interface PrefixCacheSettings {
  readonly maxBytes: number;
  /** Positions per block: the unit a prefix is matched in. */
  readonly blockPositions: number;
}

export interface StageInput {
  readonly from: string; // upstream stage_id
  readonly connector: string; // name in connectors
}

/** The one modality type (src/common/modality.ts), under the name the stage graph has used. */
export type MediaModality = Modality;

/** What a Thinker does when an encoder cannot deliver an item: fail the request, or answer without that item. */
export type EncoderFailurePolicy = 'fail' | 'text_only';

/** How images are cut into patches for a vision encoder; main and the encoder stage must agree on it. */
export interface ImageGridSettings {
  readonly patchSize: number;
  readonly mergeSize: number;
  readonly minPixels: number;
  readonly maxPixels: number;
}

/** Settings of an encoder stage (kind encoder); absent on every other kind. */
export interface EncoderSettings {
  readonly modality: MediaModality;
  /** Byte budget of the encoder output cache (per replica). */
  readonly cacheBytes: number;
  /** Embeddings that may start encoding in one step (the encoder compute budget). */
  readonly budgetEmbeddings: number;
  /** Items of one encoder run at most. */
  readonly maxBatchSize: number;
  /** How long a partial batch waits for more items before it runs anyway. */
  readonly batchTimeoutMs: number;
  readonly onFailure: EncoderFailurePolicy;
  /** Audio items longer than this are refused at admission. */
  readonly maxAudioSeconds: number;
  /** From admission: an item whose rows have not reached the Thinker by then has failed (on_failure applies). */
  readonly timeoutMs: number;
  /** Vision only (image and video: the patch and merge sizes of the model). */
  readonly imageGrid: ImageGridSettings | null;
  /** Video only: sampling defaults and the decoder's limits (`encoder.video:`). */
  readonly video: VideoSettings | null;
}

/** How a video encoder stage samples clips by default, and what the decoder in main accepts (docs/video.md). */
export interface VideoSettings {
  /** Frames per second sampled when a request names none (mm_processor_kwargs.fps). */
  readonly fps: number;
  /** Frames per clip at most (mm_processor_kwargs.max_frames): a longer clip is sampled uniformly. */
  readonly maxFrames: number;
  /** Area of a sampled frame at most, in pixels (sides multiples of patch x merge). */
  readonly framePixels: number;
  /** Frames in one temporal patch (Qwen2.5-VL: 2). */
  readonly temporalPatchSize: number;
  /** Longer clips are refused (CHORUS_ERR_VIDEO_TOO_LONG). */
  readonly maxSeconds: number;
  /** Bytes of a video (or its frame images) at most (CHORUS_ERR_VIDEO_TOO_LARGE). */
  readonly maxInputBytes: number;
  /** Bytes of the frames sampled from one clip at most, before the max_frames pick (CHORUS_ERR_VIDEO_TOO_LARGE). */
  readonly maxFrameBytes: number;
  /** The decoder's time limit per clip (CHORUS_ERR_VIDEO_DECODE_TIMEOUT). */
  readonly decodeTimeoutMs: number;
  /** use_audio_in_video: seconds per chunk of the frames/track interleave (Qwen2.5-Omni's seconds_per_chunk). */
  readonly audioChunkSeconds: number;
  /**
   * Patches of one clip's encode at most: the vision encoder attends over all of a clip's patches at once, so its
   * working memory grows with their square (src/media/video/encodeMemory.ts). A larger clip steps down under the
   * fallback (or is refused without one).
   */
  readonly maxPatchesPerEncode: number;
  /** How a clip that does not fit is served with fewer or smaller frames (null: refused instead). */
  readonly fallback: VideoFallbackSettings | null;
}

/** `encoder.video.fallback`: the steps down of a clip that does not fit, and their floor (docs/video.md). */
export interface VideoFallbackSettings {
  /** Each step keeps this share of the frames... */
  readonly framesFactor: number;
  /** ...down to this many; then frames shrink. */
  readonly minFrames: number;
  /** Each step then keeps this share of a frame's area... */
  readonly pixelsFactor: number;
  /** ...down to this area: the floor (past it the clip is refused). */
  readonly minFramePixels: number;
}

export interface StageSpec {
  readonly stageId: string;
  readonly kind: StageKind;
  readonly workerType: WorkerType;
  readonly model: ModelSpec;
  readonly engine: EngineArgs;
  readonly inputs: readonly StageInput[];
  readonly finalOutput: boolean;
  readonly finalOutputType: FinalOutputType | null;
  readonly defaultSamplingParams: SamplingParams;
  /** Instances `chorus serve` spawns on this machine (0 for placement remote). */
  readonly replicas: number;
  /** local: main spawns `replicas` processes. remote: instances on other machines join over Redis. */
  readonly placement: 'local' | 'remote';
  /** Joined remote instances /health waits for (remote stages; 0 for local ones). */
  readonly minReplicas: number;
  /**
   * Every edge touching the stage is on a redis connector, so instances started with `chorus stage` may join it
   * (a remote stage always is; a local one may take remote instances besides its own).
   */
  readonly joinable: boolean;
  /** Encoder stages only (kind encoder). */
  readonly encoder?: EncoderSettings;
  /**
   * The kind's own YAML section (a tts stage's `tts:`), resolved by its descriptor (`settings`), which also types
   * it; absent on kinds without one.
   */
  readonly settings?: unknown;
}

export interface ChunkPolicy {
  /** null = choose from Code2Wav load (dynamic initial chunk). */
  readonly initialCodecChunkFrames: number | null;
  readonly codecChunkFrames: number; // 25
  readonly codecLeftContextFrames: number; // 25
  readonly dynamicInitialChunk: boolean;
  /** Deadline of any wait for the next chunk of a request, ms. */
  readonly chunkTimeoutMs: number;
  /** Default TTFP target of requests that name none (ms); null: none (the dynamic initial chunk decides). */
  readonly ttfpTargetMs: number | null;
  /**
   * At light load the Thinker pauses a request once it has written the tokens its first audio chunk needs, until
   * main has that audio (chunkPolicy.ts firstPacketHoldTokens): the Talker's prefill then has a core to itself.
   */
  readonly firstPacketHold: boolean;
}

export type RoutingPolicy = 'ttft' | 'least_loaded' | 'round_robin';

/** The encoder-output (EC) store (`ec_store:`; README "Encoder-output store"). */
export interface EcStoreSettings {
  /** Rows stored at most (each content counted once), pinned entries aside; LRU among the rest. */
  readonly budgetBytes: number;
  /** An entry nobody used for this long expires (in main's index and in Redis). */
  readonly ttlMs: number;
  /** Where the rows are shared across instances and hosts; null: in-process copies only (main indexes them). */
  readonly redis: {
    readonly url: string;
    readonly username?: string;
    readonly password?: string;
    /** Keys are `{keyPrefix}:ec:{contentKey}`. */
    readonly keyPrefix: string;
  } | null;
}

export interface RealtimeResumeSettings {
  readonly windowMs: number;
  readonly bufferBytes: number;
}

/** YAML `realtime:` left out (and graphs not loaded from YAML). */
export const DEFAULT_REALTIME_RESUME: RealtimeResumeSettings = Object.freeze({
  windowMs: 30_000, // 30 s: a phone changing networks is back within seconds
  bufferBytes: 4 * 1024 * 1024, // 4 MiB: ~1 min of 24 kHz audio as base64 pcm16
});

/** Camera frames in a Realtime session (YAML `realtime.camera`, docs/video.md#camera-frames-in-a-conversation). */
export interface CameraSettings {
  /** Frames a session keeps: past this, the oldest frame's item is deleted (conversation.item.deleted). */
  readonly maxFrames: number;
  /**
   * A frame whose thumbnail (16 x 16 box-averaged luma) differs from the last kept frame's by less than this mean
   * absolute difference, as a fraction of full scale, is a near-duplicate: it is skipped (its item deleted).
   * 0: every frame is kept.
   */
  readonly duplicateThreshold: number;
}

export const DEFAULT_CAMERA: CameraSettings = Object.freeze({
  maxFrames: 8, // 8 s of camera at one frame a second
  duplicateThreshold: 0.02, // 2% of full scale: a still scene's sensor noise stays under it, a hand moving does not
});

/**
 * Bounds on the estimated wait of a request admitted now (src/server/admission/admissionDecision.ts): beyond either,
 * it is refused with a 429 and a Retry-After from the estimate instead of being queued into lateness. null: no bound.
 */
export interface AdmissionSlo {
  /** Time in line (the server's and the Thinker's queue) before its own work starts. */
  readonly maxQueueMs: number | null;
  /** Time to its first packet: first audio when it asks for audio, else first text. */
  readonly sloTtfpMs: number | null;
}

/**
 * The YAML's bounds (`admission:`): as AdmissionSlo, with `max_queue_ms: measured` (the default) meaning a bound the
 * server derives from what requests alone take on it (src/server/admission/measuredSlo.ts).
 */
export interface AdmissionSettings {
  readonly maxQueueMs: number | null | 'measured';
  readonly sloTtfpMs: number | null;
}

export type CachePartition = 'api_key' | 'shared';

/**
 * The pipeline's speech-to-text (YAML `asr:`): Whisper in a CTranslate2 folder (faster-whisper's layout), given as a
 * path or as a folder inside an installed Python package. It transcribes input audio for Realtime input transcription
 * and /v1/audio/transcriptions, in a process of its own beside the stages.
 */
export interface AsrSpec {
  readonly model: { readonly path: string } | { readonly pythonPackage: string; readonly dir: string };
  readonly threads: number;
}

/**
 * Realtime `semantic_vad` (docs/voice.md#semantic_vad): the end-of-turn model's ONNX file (Smart Turn v3), null when
 * there is none; and what semantic_vad does then: refuse (a session.update asking for it gets a 400 naming the fix)
 * or silence (the VAD's silence rule, as server_vad, said so in session.updated).
 */
export interface SemanticVadSpec {
  readonly modelPath: string | null;
  readonly fallback: 'refuse' | 'silence';
}

export interface StageGraph {
  /** Absolute path of the YAML file, or '<embedded>' for the built-in default. */
  readonly file: string;
  readonly asyncChunk: boolean;
  /**
   * A stage instance with requests in flight that has sent nothing (no stats heartbeat) for this long while its
   * process used no CPU is hung: its requests fail with CHORUS_ERR_STAGE_HUNG and it is killed and restarted.
   */
  readonly stageHangMs: number;
  /**
   * Nice increment of every stage process over the process that started it (0-19): the server's event loop (socket
   * I/O, relaying chunks, VAD hand-off) is short, latency-bound work that must not queue behind model steps.
   */
  readonly stageNice: number;
  /** Where generated models are cached (absolute). */
  readonly modelsDir: string;
  /** Model names the front end answers to besides its own id (YAML model_aliases); none when absent. */
  readonly modelAliases?: readonly string[];
  /** Speech-to-text for input transcription (YAML asr); absent or null: the pipeline has none. */
  readonly asr?: AsrSpec | null;
  /**
   * Who shares the prefix cache and the encoder outputs (YAML security.cache_partition): `api_key`, each API key
   * its own partition (the default); `shared`, every key one. A request's cache_salt partitions further either way.
   */
  readonly cachePartition?: CachePartition;
  /**
   * Realtime session resume (YAML `realtime:`, docs/realtime-resume.md): a session whose socket dropped is kept
   * windowMs for its client to resume (0: never), with the last bufferBytes of its sent events to replay. Absent:
   * the defaults (config/defaults.ts).
   */
  readonly realtimeResume?: RealtimeResumeSettings;
  /** Camera frames in Realtime sessions (YAML `realtime.camera`); absent: DEFAULT_CAMERA. */
  readonly realtimeCamera?: CameraSettings;
  /** semantic_vad's end-of-turn model (YAML realtime.semantic_vad); absent: none, semantic_vad refused. */
  readonly semanticVad?: SemanticVadSpec;
  readonly connectors: Readonly<Record<string, ConnectorSpec>>;
  readonly chunkPolicy: ChunkPolicy;
  /** How the Talker and Code2Wav order work: fifo (oldest first, the default) or playback (least slack first). */
  readonly scheduling: SchedulingPolicy;
  /** The encoder-output store; null when the config has no `ec_store:` section. */
  readonly ecStore?: EcStoreSettings | null;
  /**
   * Which instances take a request: ttft = the (Thinker, encoder per item) choice with the lowest estimated time to
   * first token; least_loaded = fewest requests in flight per stage; round_robin = in turn (for comparison).
   */
  readonly routing: RoutingPolicy;
  /** Admission on latency (YAML `admission:`); absent: the count bounds of the server only. */
  readonly admission?: AdmissionSettings;
  /**
   * Topologically ordered: encoder stages (which read media from main, not from another stage) come before the
   * Thinker they feed; without encoders the entry stage is first.
   */
  readonly stages: readonly StageSpec[];
  /** The Thinker: where requests enter (their prompt goes to it; encoders only get the media). */
  readonly entryStageId: string;
  /** Non-fatal findings of the loader (e.g. more threads than cores), `file:line path: message` each. */
  readonly warnings?: readonly string[];
  /** sha256 of the YAML text: instances joining from other machines must have been started from the same. */
  readonly configHash?: string;
}

/** The encoder stage of each modality among the entry Thinker's inputs (an image encoder may serve video too). */
export function encodersOf(graph: StageGraph): ReadonlyMap<MediaModality, StageSpec> {
  const entry = graph.stages.find((s) => s.stageId === graph.entryStageId)!;
  const out = new Map<MediaModality, StageSpec>();
  for (const input of entry.inputs) {
    const spec = graph.stages.find((s) => s.stageId === input.from);
    if (!spec?.encoder) continue;
    // An image encoder with `video:` settings serves video too (docs/video.md); a video encoder of its own wins.
    if (spec.encoder.modality === 'image' && spec.encoder.video && !out.has('video')) out.set('video', spec);
    out.set(spec.encoder.modality, spec);
  }
  return out;
}
