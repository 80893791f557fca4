/**
 * The YAML shape of a stage graph (snake_case keys), as TypeBox schemas. Every object is closed
 * (additionalProperties: false) so a misspelt key is an error, not a silently ignored setting.
 * `errorMessage` is ours: the text shown when a value fails, in place of TypeBox's generic wording.
 * Defaults live in defaults.ts; cross-field rules (graph shape, model sizes) live in the resolvers.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { ByteSize, closed, int, oneOf, optional } from '../common/yamlSchema.ts';
import { kindSections, stageKindNames } from '../../stages/registry.ts';

export { oneOf };

export { ByteSize };

export const ConnectorYaml = Type.Object(
  {
    // Checked against transport/registry.ts (built kinds, and kinds known but not built, with why).
    kind: Type.String({ minLength: 1 }),
    options: optional(Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be a mapping' })),
  },
  closed,
);

export const ChunkPolicyYaml = Type.Object(
  {
    initial_codec_chunk_frames: optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null(), Type.Literal('auto')], {
        errorMessage: 'must be a positive integer, or "auto" (or null) to size it from the Code2Wav load',
      }),
    ),
    codec_chunk_frames: optional(int(1)),
    codec_left_context_frames: optional(int(0)),
    dynamic_initial_chunk: optional(Type.Boolean()),
    chunk_timeout_ms: optional(int(1)),
    // A chunk wait past chunk_timeout_ms goes on while its producer lives, up to this (docs/operations.md).
    max_chunk_wait_ms: optional(int(1)),
    ttfp_target_ms: optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
        errorMessage: 'must be a positive integer (ms), or null for no default target',
      }),
    ),
    first_packet_hold: optional(Type.Boolean()),
    // Speaking answers' steps wait (bounded) while a newcomer's first audio is on its way (docs/scheduling.md).
    first_audio_first: optional(Type.Boolean()),
    // With many answers speaking, a text far ahead of its speech waits (docs/scheduling.md, "Speech lead").
    speech_lead_ms: optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
        errorMessage: 'must be a positive integer (ms), or null to never pace answers to their speech',
      }),
    ),
    speech_lead_min_answers: optional(int(1)),
    // A step takes at most this many answers far ahead of their listeners (docs/scheduling.md, "Speaking slices").
    speaking_slice: optional(
      Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
        errorMessage: 'must be a positive integer (answers a step), or null for every speaking answer in every step',
      }),
    ),
    // At light load a prompt's prefill in two steps, the Talker on the first (docs/scheduling.md, "The first prefill
    // in two").
    first_prefill_split: optional(
      Type.Union([Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }), Type.Null()], {
        errorMessage: "must be a share of the prompt between 0 and 1 (the first step's), or null for one step",
      }),
    ),
  },
  closed,
);

export const EngineYaml = Type.Object(
  {
    max_num_seqs: optional(int(1)),
    max_num_batched_tokens: optional(int(1)),
    // AR stages: newcomers' whole prefills run in a step of their own, ahead of the decodes (src/sched/ArScheduler.ts).
    prefill_first: optional(Type.Boolean()),
    // AR stages: steps a request holds its batch seat before yielding it to one waiting (false: until it finishes).
    seat_turn_steps: optional(Type.Union([int(1), Type.Literal(false)])),
    // AR stages: positions one request computes in a step at most (a long prefill takes several short steps).
    long_prefill_token_threshold: optional(int(1)),
    // The Thinker: steps wait while any request's media encodes (a baseline for the bench, docs/video.md).
    sync_encoding: optional(Type.Boolean()),
    // The Thinker: encoded media rows its requests may hold at once (docs/video.md "Memory").
    media_rows_bytes: optional(ByteSize),
    threads: optional(int(1)),
    // Nice levels this stage runs below the other stages (added to stage_nice): an encoder below the Thinker.
    nice: optional(Type.Integer({ minimum: 0, maximum: 19 })),
    // Linux's scheduling class for this stage's processes: idle runs it only on a core nothing else wants (chrt).
    sched: optional(Type.Literal('idle')),
    kv_cache_bytes: optional(ByteSize),
    prefix_cache: optional(
      Type.Union(
        [
          Type.Literal(false),
          Type.Object(
            {
              max_bytes: optional(ByteSize),
              block_positions: optional(Type.Integer({ minimum: 1, maximum: 1024 })),
            },
            closed,
          ),
        ],
        { errorMessage: 'must be false (off) or {max_bytes, block_positions}' },
      ),
    ),
    // Requests lost with an instance of this stage are replayed on a live one (src/engine/requests/migration.ts).
    migration: optional(
      Type.Union(
        [
          Type.Literal(false),
          Type.Object(
            {
              max_attempts: optional(int(1)),
              max_replay_tokens: optional(int(0)),
              // Bounded: a lost request never waits for good (an hour at most).
              max_wait_ms: optional(Type.Integer({ minimum: 1, maximum: 3_600_000 })),
            },
            closed,
          ),
        ],
        {
          errorMessage:
            'must be false (off) or {max_attempts: an integer >= 1, max_replay_tokens: an integer >= 0, ' +
            'max_wait_ms: an integer from 1 to 3600000}',
        },
      ),
    ),
    cpus: optional(
      Type.Union([Type.Array(int(0), { minItems: 1, uniqueItems: true }), Type.Literal('auto')], {
        errorMessage:
          'must be a list of distinct core numbers (0, 1, ...), at least one, or "auto" (a core of its own)',
      }),
    ),
  },
  closed,
);

export const SamplingYaml = Type.Object(
  {
    temperature: optional(Type.Number({ minimum: 0 })),
    top_k: optional(int(0)),
    top_p: optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    repetition_penalty: optional(Type.Number({ exclusiveMinimum: 0 })),
    seed: optional(int(0)),
    max_tokens: optional(int(1)),
    stop_token_ids: optional(Type.Array(int(0), { errorMessage: 'must be a list of token ids (integers >= 0)' })),
    ignore_eos: optional(Type.Boolean()),
  },
  closed,
);

/** `encoder.video:` of a video encoder stage: sampling defaults (a request may override) and the decoder's limits. */
export const VideoYaml = Type.Object(
  {
    fps: optional(Type.Number({ exclusiveMinimum: 0, maximum: 60 })),
    max_frames: optional(int(1)),
    frame_pixels: optional(int(28 * 28)),
    max_seconds: optional(Type.Number({ exclusiveMinimum: 0 })),
    max_input_bytes: optional(ByteSize),
    max_frame_bytes: optional(ByteSize),
    decode_timeout_ms: optional(int(1)),
    /** Decoded clips main keeps for the next question about the same clip (0: none). */
    decoded_cache_bytes: optional(ByteSize),
    audio_chunk_seconds: optional(Type.Number({ exclusiveMinimum: 0, maximum: 60 })),
    /** Patches of one clip's encode at most (its attention's working memory); the fallback steps a clip under. */
    max_patches_per_encode: optional(int(1)),
    /** A clip's rows to the Thinker in pieces of this many temporal groups, as encoded (false: the clip whole). */
    stream_groups: optional(Type.Union([int(1), Type.Literal(false)])),
    /** A clip that does not fit is served with fewer, then smaller frames (false: refused instead). */
    fallback: optional(
      Type.Union([
        Type.Literal(false),
        Type.Object(
          {
            frames_factor: optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
            min_frames: optional(int(1)),
            pixels_factor: optional(Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 })),
            min_frame_pixels: optional(int(28 * 28)),
          },
          closed,
        ),
      ]),
    ),
  },
  closed,
);

/** `encoder:` of an encoder stage: what it encodes, its cache, its compute budget and batching. */
export const EncoderYaml = Type.Object(
  {
    modality: oneOf(['audio', 'image', 'video'] as const),
    cache_bytes: optional(ByteSize),
    budget_embeddings: optional(int(1)),
    max_batch_size: optional(int(1)),
    batch_timeout_ms: optional(int(0)),
    on_failure: optional(oneOf(['fail', 'text_only'] as const)),
    max_audio_seconds: optional(Type.Number({ exclusiveMinimum: 0 })),
    timeout_ms: optional(int(1)),
    max_encode_bytes: optional(ByteSize),
    video: optional(VideoYaml),
  },
  closed,
);

/** `ec_store:` the encoder-output store shared by every encoder and Thinker instance (README). */
export const EcStoreYaml = Type.Object(
  {
    budget_bytes: optional(ByteSize),
    ttl_seconds: optional(int(1)),
    // Default: the deployment's redis connector (its url, credentials and key_prefix); none: in-process only.
    url: optional(
      Type.Union([Type.String({ pattern: '^rediss?://' }), Type.Null()], {
        errorMessage: 'must be a redis:// or rediss:// URL of one node, or null to keep the rows in-process only',
      }),
    ),
    username: optional(Type.String()),
    password: optional(Type.String()),
    key_prefix: optional(Type.String({ pattern: '^[A-Za-z0-9_.-]+$', errorMessage: 'must be letters, digits, _ . -' })),
  },
  closed,
);

export const StageInputYaml = Type.Object(
  {
    from: Type.String({ minLength: 1 }),
    connector: optional(Type.String({ minLength: 1 })),
  },
  closed,
);

export const StageYaml = Type.Object(
  {
    stage_id: Type.String({
      pattern: '^[a-z0-9]+(-[a-z0-9]+)*$',
      errorMessage: 'must be lowercase letters, digits and single dashes (no "_"), e.g. "thinker" or "talker-2"',
    }),
    kind: oneOf(stageKindNames),
    // Decided by the kind; still read so the loader can say so instead of "unknown key".
    worker_type: optional(Type.Unknown()),
    // Checked against the kind-specific schemas below once the kind is known.
    model: optional(Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be a mapping' })),
    engine: optional(EngineYaml),
    inputs: optional(Type.Array(StageInputYaml, { errorMessage: 'must be a list of {from, connector}' })),
    next_stage_processor: optional(Type.Unknown()),
    final_output: optional(Type.Boolean()),
    final_output_type: optional(
      Type.Union([oneOf(['text', 'audio'] as const), Type.Null()], { errorMessage: 'must be text or audio' }),
    ),
    default_sampling_params: optional(SamplingYaml),
    replicas: optional(int(1)),
    // remote: `chorus serve` spawns none; instances join over Redis (`chorus stage`), and serve waits for
    // min_replicas of them before /health is ready (also on a local stage whose edges are all on redis: joined
    // instances beside its own replicas).
    placement: optional(oneOf(['local', 'remote'] as const)),
    min_replicas: optional(int(0)),
    encoder: optional(EncoderYaml),
    // The sections kinds declare of their own (a tts stage's `tts:`: its descriptor's `settings`); read by
    // loadConfig from the stage as a mapping (their types are the kinds').
    ...(Object.fromEntries(kindSections().map(({ section }) => [section.key, optional(section.yaml)])) as Record<
      never,
      TSchema
    >),
  },
  closed,
);

export const GraphYaml = Type.Object(
  {
    async_chunk: optional(Type.Boolean()),
    scheduling: optional(
      Type.Union([Type.Literal('playback'), Type.Literal('fifo')], {
        errorMessage: 'must be playback (least slack first) or fifo (oldest first)',
      }),
    ),
    // Admission on latency (src/server/admission/admissionDecision.ts): refuse what would start later than this.
    admission: optional(
      Type.Object(
        {
          // Absent or measured: from what requests alone take (src/server/admission/measuredSlo.ts); null: none.
          max_queue_ms: optional(
            Type.Union([int(1), Type.Null(), Type.Literal('measured')], {
              errorMessage:
                'must be an integer >= 1 (ms), measured (derived from requests alone), or null for no bound',
            }),
          ),
          // measured: a spoken answer's first audio, from what requests alone take (opt-in); absent or null: none.
          slo_ttfp_ms: optional(
            Type.Union([int(1), Type.Null(), Type.Literal('measured')], {
              errorMessage:
                'must be an integer >= 1 (ms), measured (derived from requests alone), or null for no bound',
            }),
          ),
          // adaptive (absent): requests run at once up to the count whose first packets lately met the bound
          // (src/server/admission/RunningLimit.ts); fixed: up to the server's --max-running-requests only.
          running_limit: optional(
            Type.Union([Type.Literal('adaptive'), Type.Literal('fixed')], {
              errorMessage: 'must be adaptive (learned from first packets) or fixed (--max-running-requests only)',
            }),
          ),
        },
        closed,
      ),
    ),
    // Which Thinker and encoder instances take a request (src/engine/routing/chooseRoute.ts).
    routing: optional(
      Type.Union([Type.Literal('ttft'), Type.Literal('least_loaded'), Type.Literal('round_robin')], {
        errorMessage: 'must be ttft (lowest estimated time to first token), least_loaded or round_robin',
      }),
    ),
    // How long main counts an ended request's prompt blocks as held on its Thinker before a stats report says so
    // (KV-aware routing and encodes skipped for held media; src/engine/routing/KvIndex.ts); 0: reports only.
    kv_prediction_ms: optional(int(0)),
    // Other names the front end answers to besides its own model id (`gpt-4o` for clients that cannot be told
    // another): a request naming any other model is refused with 404 model_not_found.
    model_aliases: optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
        uniqueItems: true,
        errorMessage: 'must be a list of distinct model names (strings)',
      }),
    ),
    // Speech-to-text (Whisper, faster-whisper's CTranslate2 folder) for input transcription, in its own process.
    asr: optional(
      Type.Object(
        {
          model: Type.Union(
            [
              Type.Object({ path: Type.String({ minLength: 1 }) }, closed),
              Type.Object(
                { python_package: Type.String({ minLength: 1 }), dir: Type.String({ minLength: 1 }) },
                closed,
              ),
            ],
            { errorMessage: 'must be {path: DIR} or {python_package: NAME, dir: DIR inside it}' },
          ),
          threads: optional(int(1)),
        },
        closed,
      ),
    ),
    models_dir: optional(Type.String({ minLength: 1 })),
    model_preset: optional(Type.String({ minLength: 1 })),
    model_seed: optional(int(0)),
    connectors: optional(
      Type.Record(Type.String(), ConnectorYaml, { errorMessage: 'must be a mapping of name -> {kind, options}' }),
    ),
    chunk_policy: optional(ChunkPolicyYaml),
    // Default of every encoder stage's encoder.on_failure.
    on_encoder_failure: optional(oneOf(['fail', 'text_only'] as const)),
    // A stage instance with work whose process neither reports nor runs for this long is hung (killed, restarted).
    stage_hang_ms: optional(int(100)),
    // How much lower than the server the stage processes run (nice increment, 0-19).
    stage_nice: optional(Type.Integer({ minimum: 0, maximum: 19 })),
    // While requests are live, main (and a `chorus stage` host) asks the kernel to keep every idle core out of sleep
    // states slower than this to leave (us; PM QoS): 0 = idle cores poll, so a woken stage runs at once
    // (src/common/cpuWakeupLatency.ts).
    cpu_wakeup_latency_us: optional(
      Type.Union([Type.Integer({ minimum: 0, maximum: 1_000_000 }), Type.Null()], {
        errorMessage: "must be an integer 0-1000000 (us), or null to leave the machine's idle states as they are",
      }),
    ),
    ec_store: optional(EcStoreYaml),
    // Who shares the prefix cache and the encoder outputs (docs/security.md#what-is-shared): api_key gives each
    // API key its own partition (with no key configured, everyone is one tenant); shared puts every key in one.
    security: optional(Type.Object({ cache_partition: optional(oneOf(['api_key', 'shared'] as const)) }, closed)),
    // Realtime session resume (docs/realtime-resume.md): how long a session whose socket dropped waits for its client
    // to come back (0: resume off), and how many bytes of sent events it keeps to replay. camera: the frames a session
    // keeps, and how different from the last kept one a frame must be to count (docs/video.md). semantic_vad's
    // end-of-turn model (docs/voice.md#semantic_vad): Smart Turn v3's ONNX file (default: where .ci/run puts it in the
    // user cache), and what semantic_vad does where there is none: refuse (the default) or run the VAD's silence rule
    // (silence, said so in session.updated). auto_truncation_positions: what session.truncation "auto" lets a
    // conversation's items fill after the instructions before it truncates, down to half (docs/conversations.md;
    // default 2048).
    realtime: optional(
      Type.Object(
        {
          resume_window_ms: optional(int(0)),
          resume_buffer_bytes: optional(ByteSize),
          camera: optional(
            Type.Object(
              {
                max_frames: optional(int(1)),
                duplicate_threshold: optional(Type.Number({ minimum: 0, maximum: 1 })),
              },
              closed,
            ),
          ),
          auto_truncation_positions: optional(int(16)),
          semantic_vad: optional(
            Type.Object(
              {
                model: optional(Type.String({ minLength: 1 })),
                fallback: optional(oneOf(['refuse', 'silence'] as const)),
              },
              closed,
            ),
          ),
        },
        closed,
      ),
    ),
    stages: Type.Array(StageYaml, { minItems: 1, errorMessage: 'must be a non-empty list of stages' }),
  },
  closed,
);

// ------------------------------------------------------------------------------------------------ models

/** `model: {gguf: PATH}` or `{gguf: {python_package, file}}`: a GGUF LLM imported into the model cache. */
export const GgufModelYaml = Type.Object(
  {
    gguf: Type.Union(
      [
        Type.String({ minLength: 1 }),
        Type.Object(
          { python_package: Type.String({ minLength: 1 }), file: Type.String({ minLength: 1 }) },
          { additionalProperties: false },
        ),
      ],
      { errorMessage: 'must be a path to a .gguf file or {python_package: NAME, file: FILE}' },
    ),
  },
  closed,
);

export const FileModelYaml = Type.Object(
  {
    path: Type.String({ minLength: 1 }),
    tokenizer: optional(Type.String({ minLength: 1 })),
  },
  closed,
);
