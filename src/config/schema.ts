/**
 * The YAML shape of a stage graph (snake_case keys), as TypeBox schemas. Every object is closed
 * (additionalProperties: false) so a misspelt key is an error, not a silently ignored setting.
 * `errorMessage` is ours: the text shown when a value fails, in place of TypeBox's generic wording.
 * Defaults live in defaults.ts; cross-field rules (graph shape, model sizes) live in the resolvers.
 */
import { Type, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';

const closed = { additionalProperties: false } as const;

/** A string enum whose static type is the union of its values. */
export function oneOf<const T extends readonly string[]>(values: T): TUnion<TLiteral<T[number]>[]> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { errorMessage: `must be one of ${values.join(', ')}` },
  );
}

const int = (minimum: number, description?: string) => Type.Integer({ minimum, description });
const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);

/** An integer count of bytes, or a string with a binary unit ("256MiB"); see parseByteSize. */
export const ByteSize = Type.Union([Type.Integer({ minimum: 1 }), Type.String({ pattern: '^\\s*\\d+(\\.\\d+)?\\s*(B|KiB|MiB|GiB|KB|MB|GB)\\s*$' })], {
  errorMessage: 'must be a byte count: a positive integer or a string like "64MiB" (B, KiB, MiB, GiB, KB, MB, GB)',
});

export const ConnectorYaml = Type.Object(
  {
    kind: oneOf(['shm', 'inproc', 'redis'] as const),
    options: optional(Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be a mapping' })),
  },
  closed,
);

/** Per-kind connector options, checked once the kind is known. */
export const ConnectorOptionsYaml = {
  shm: Type.Object({ ring_bytes: optional(ByteSize) }, closed),
  inproc: Type.Object({}, closed),
  redis: Type.Object(
    {
      url: optional(Type.String({ pattern: '^rediss?://', errorMessage: 'must be a redis:// or rediss:// URL' })),
      password: optional(Type.String()),
      ttl_seconds: optional(int(1)),
      pool_size: optional(int(1)),
      key_prefix: optional(Type.String()),
    },
    closed,
  ),
} as const;

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
  },
  closed,
);

export const EngineYaml = Type.Object(
  {
    max_num_seqs: optional(int(1)),
    max_num_batched_tokens: optional(int(1)),
    threads: optional(int(1)),
    kv_cache_bytes: optional(ByteSize),
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

/** `encoder:` of an encoder stage: what it encodes, its cache, its compute budget and batching. */
export const EncoderYaml = Type.Object(
  {
    modality: oneOf(['audio', 'image'] as const),
    cache_bytes: optional(ByteSize),
    budget_embeddings: optional(int(1)),
    max_batch_size: optional(int(1)),
    batch_timeout_ms: optional(int(0)),
    on_failure: optional(oneOf(['fail', 'text_only'] as const)),
    max_audio_seconds: optional(Type.Number({ exclusiveMinimum: 0 })),
    timeout_ms: optional(int(1)),
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
    kind: oneOf(['thinker', 'talker', 'code2wav', 'encoder'] as const),
    worker_type: optional(oneOf(['ar', 'generation'] as const)),
    // Checked against the kind-specific schemas below once the kind is known.
    model: optional(Type.Record(Type.String(), Type.Unknown(), { errorMessage: 'must be a mapping' })),
    engine: optional(EngineYaml),
    inputs: optional(Type.Array(StageInputYaml, { errorMessage: 'must be a list of {from, connector}' })),
    next_stage_processor: optional(
      Type.Union([oneOf(['thinker2talker', 'talker2code2wav', 'encoder2thinker'] as const), Type.Null()], {
        errorMessage: 'must be one of thinker2talker, talker2code2wav, encoder2thinker, or null',
      }),
    ),
    final_output: optional(Type.Boolean()),
    final_output_type: optional(
      Type.Union([oneOf(['text', 'audio'] as const), Type.Null()], { errorMessage: 'must be text or audio' }),
    ),
    default_sampling_params: optional(SamplingYaml),
    replicas: optional(int(1)),
    encoder: optional(EncoderYaml),
  },
  closed,
);

export const GraphYaml = Type.Object(
  {
    async_chunk: optional(Type.Boolean()),
    models_dir: optional(Type.String({ minLength: 1 })),
    model_preset: optional(Type.String({ minLength: 1 })),
    model_seed: optional(int(0)),
    connectors: optional(Type.Record(Type.String(), ConnectorYaml, { errorMessage: 'must be a mapping of name -> {kind, options}' })),
    chunk_policy: optional(ChunkPolicyYaml),
    // Default of every encoder stage's encoder.on_failure.
    on_encoder_failure: optional(oneOf(['fail', 'text_only'] as const)),
    stages: Type.Array(StageYaml, { minItems: 1, errorMessage: 'must be a non-empty list of stages' }),
  },
  closed,
);

// ------------------------------------------------------------------------------------------------ models

const generatedCommon = { preset: optional(Type.String({ minLength: 1 })), seed: optional(int(0)) };
const transformer = {
  hidden_size: optional(int(1)),
  num_layers: optional(int(1)),
  num_heads: optional(int(1)),
  intermediate_size: optional(int(1)),
  max_positions: optional(int(1)),
  logit_scale: optional(Type.Number({ exclusiveMinimum: 0 })),
};

/** Generated models: a preset, a seed and any size overrides (the fields of ThinkerSize etc., snake_case). */
export const GeneratedModelYaml = {
  thinker: Type.Object({ ...generatedCommon, ...transformer, vocab_size: optional(int(1)), accept_layer: optional(int(0)) }, closed),
  talker: Type.Object(
    {
      ...generatedCommon,
      ...transformer,
      codebook_size: optional(int(1)),
      num_codebooks: optional(int(1)),
      frames_per_token: optional(int(1)),
      // Normally derived (2 x the upstream thinker's hidden_size); needed only when that thinker is a file model.
      condition_dim: optional(int(1)),
    },
    closed,
  ),
  code2wav: Type.Object(
    {
      ...generatedCommon,
      num_codebooks: optional(int(1)),
      codebook_size: optional(int(1)),
      hidden_size: optional(int(1)),
      num_layers: optional(int(1)),
      kernel_size: optional(int(1)),
      samples_per_frame: optional(int(1)),
      sample_rate_hz: optional(int(1)),
    },
    closed,
  ),
  // Encoders: output_size is derived from the Thinker they feed (needed only when that Thinker is a file model).
  audio_encoder: Type.Object(
    { ...generatedCommon, hidden_size: optional(int(1)), num_layers: optional(int(1)), num_heads: optional(int(1)), intermediate_size: optional(int(1)), num_mel_bins: optional(int(1)), output_size: optional(int(1)) },
    closed,
  ),
  vision_encoder: Type.Object(
    {
      ...generatedCommon,
      hidden_size: optional(int(1)),
      num_layers: optional(int(1)),
      num_heads: optional(int(1)),
      intermediate_size: optional(int(1)),
      patch_size: optional(int(1)),
      merge_size: optional(int(1)),
      output_size: optional(int(1)),
    },
    closed,
  ),
} as const;

export const FileModelYaml = Type.Object(
  {
    path: Type.String({ minLength: 1 }),
    tokenizer: optional(Type.String({ minLength: 1 })),
  },
  closed,
);
