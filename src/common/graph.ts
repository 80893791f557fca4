/**
 * The resolved, validated, defaulted and frozen stage graph. src/config/loadConfig.ts produces it from YAML;
 * everything downstream reads only this shape (snake_case in YAML, camelCase here). Its parts with a subject of their
 * own are in samplingParams.ts, modelSpec.ts, encoderSettings.ts and realtimeSettings.ts.
 */
import type { SamplingParams } from './samplingParams.ts';
import type { ModelSpec } from './modelSpec.ts';
import type { EncoderSettings, MediaModality } from './encoderSettings.ts';
import type { AsrSpec, CameraSettings, RealtimeResumeSettings, SemanticVadSpec } from './realtimeSettings.ts';

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
  /**
   * `idle`: this stage's processes run in Linux's SCHED_IDLE class (src/common/schedIdle.ts), below every nice level:
   * they get a core only when nothing else wants it. Absent: the normal class.
   */
  readonly sched?: 'idle';
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
  /**
   * The longest a wait for a chunk goes on (ms, from its start, at least chunkTimeoutMs) while its producer is live
   * at each deadline: a stage starved of CPU is slow, not lost (transport/adapter/ChunkTransferAdapter.ts).
   */
  readonly maxChunkWaitMs: number;
  /** Default TTFP target of requests that name none (ms); null: none (the dynamic initial chunk decides). */
  readonly ttfpTargetMs: number | null;
  /**
   * At light load the Thinker pauses a request once it has written the tokens its first audio chunk needs, until
   * main has that audio (chunkPolicy.ts firstPacketHoldTokens): the Talker's prefill then has a core to itself.
   */
  readonly firstPacketHold: boolean;
  /**
   * While a request waits for its first audio, the stages hold back the steps of answers that have been speaking for
   * a while, so the cores compute the newcomer (src/sched/FirstAudioFirst.ts, bounded: nothing starves).
   */
  readonly firstAudioFirst: boolean;
  /**
   * While a stage holds at least speechLeadMinAnswers speaking answers, an answer whose text leads its speech by this
   * much (ms) waits until its lead falls below it (src/sched/SpeechLead.ts); null: never paced.
   */
  readonly speechLeadMs: number | null;
  readonly speechLeadMinAnswers: number;
  /**
   * With firstAudioFirst, a Thinker or Talker step takes at most this many of the answers it may hold back (speaking
   * for a while, listener far ahead), in turns, so a newcomer waits for a short step (src/sched/SpeakingSlices.ts);
   * null: they all share every step.
   */
  readonly speakingSlice: number | null;
  /**
   * With a first-packet hold (light load), the Thinker computes a prompt of FIRST_PREFILL_SPLIT_MIN or more positions
   * in two steps, the first this share of it, so the Talker prefills those rows while the Thinker computes the rest
   * (src/sched/chunkPolicy.ts firstPrefillPiece); null: in one step.
   */
  readonly firstPrefillSplit: number | null;
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

/**
 * Bounds on the estimated wait of a request admitted now (src/server/admission/admissionDecision.ts): beyond either,
 * it is refused with a 429 and a Retry-After from the estimate instead of being queued into lateness. null: no bound.
 */
export interface AdmissionSlo {
  /** Time in line (the server's and the Thinker's queue) before its own work starts. */
  readonly maxQueueMs: number | null;
  /** Time to its first packet: first audio when it asks for audio, else first text. */
  readonly sloTtfpMs: number | null;
  /**
   * A spoken answer is refused while the frame-making stage's steps are slower than the audio they make (the
   * measured default's, admissionDecision.ts): admitted, it and every answer beside it would underrun.
   */
  readonly audioPace?: boolean;
}

/**
 * The YAML's bounds (`admission:`): as AdmissionSlo, with `max_queue_ms: measured` (the default) meaning a bound the
 * server derives from what requests alone take on it (src/server/admission/measuredSlo.ts).
 */
export interface AdmissionSettings {
  readonly maxQueueMs: number | null | 'measured';
  /** `measured` (the default) bounds the first audio of a request that asks for audio; its first text is unbounded. */
  readonly sloTtfpMs: number | null | 'measured';
  /**
   * adaptive: the requests that run at once are held to the count whose first packets lately came within the bound
   * (slo_ttfp_ms, or the measured one; src/server/admission/RunningLimit.ts); fixed: the server's count only.
   * Absent: adaptive.
   */
  readonly runningLimit?: 'adaptive' | 'fixed';
}

export type CachePartition = 'api_key' | 'shared';

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
  /**
   * While requests are live main holds the machine's idle cores to this exit latency (us; 0: they poll), so a woken
   * stage runs at once (src/common/cpuWakeupLatency.ts); null or absent: the machine's idle states as they are.
   */
  readonly cpuWakeupLatencyUs?: number | null;
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
  /** Positions session.truncation "auto" lets a conversation's items fill (YAML realtime.auto_truncation_positions). */
  readonly autoTruncationPositions?: number;
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
  /** How long an ended request's prompt blocks count as held on its Thinker without a report (KvIndex.ts), ms. */
  readonly kvPredictionMs: number;
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
