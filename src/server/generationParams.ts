/**
 * Generation knobs shared by both protocols: the OpenAI ones (temperature, top_p, seed, frequency_penalty,
 * presence_penalty, logit_bias, token limit) and the Chorus extensions (top_k, repetition_penalty, ignore_eos,
 * initial_codec_chunk_frames, ttfp_target_ms), and how they become a GenerateRequest. Each is honored; what Chorus
 * cannot do is refused where the protocol parses it (chat: stop, n > 1), never silently ignored.
 */
import { Type, type Static } from '@sinclair/typebox';
import type { SamplingParams } from '../common/samplingParams.ts';
import type { GenerateRequest } from '../common/engine.ts';
import { ClientInputError } from './validate.ts';

/** Field schemas, spread into each protocol's request schema (snake_case, as on the wire). */
export const generationFields = {
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
  seed: Type.Optional(Type.Integer({ minimum: -(2 ** 53 - 1), maximum: 2 ** 53 - 1 })),
  frequency_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  presence_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
  /** token id (as a string, JSON's only key type) -> bias added to its logit, -100..100. */
  logit_bias: Type.Optional(
    Type.Record(Type.String({ pattern: '^[0-9]+$' }), Type.Number({ minimum: -100, maximum: 100 }), {
      additionalProperties: false,
    }),
  ),
  /** Chorus extension (vLLM's): sample among the k most likely tokens only (0 = off). */
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  /** Chorus extension (vLLM's, Hugging Face semantics): > 1 discourages tokens already in the sequence. */
  repetition_penalty: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 10 })),
  /** Chorus extension: keep generating past EOS up to the token limit (fixed-length benchmarks). */
  ignore_eos: Type.Optional(Type.Boolean()),
  /** Chorus extension: codec frames in the first Code2Wav chunk (smaller = earlier first audio). */
  initial_codec_chunk_frames: Type.Optional(Type.Integer({ minimum: 1, maximum: 4096 })),
  /**
   * Chorus extension: when the first audio packet should arrive (ms from the request). The chunk schedule is
   * picked to meet it under the current load; a target that is missed is reported in the response's warnings.
   */
  ttfp_target_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
};

export type GenerationFields = Static<ReturnType<typeof Type.Object<typeof generationFields>>>;

/** Later sources win field by field (session defaults, then per-response overrides). */
export function mergeGeneration(...layers: (GenerationFields | undefined)[]): GenerationFields {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    if (!layer) continue;
    for (const key of Object.keys(generationFields)) {
      const value = (layer as Record<string, unknown>)[key];
      if (value !== undefined) out[key] = value;
    }
  }
  return out as GenerationFields;
}

/** The server's cap on client token limits, and the entry stage's configured default. */
export interface TokenLimits {
  readonly cap: number;
  readonly stageDefault: number;
  /** The Thinker's positions: prompt text over BYTES_PER_POSITION times this is refused before tokenizing. */
  readonly promptPositions: number;
}

/**
 * Checks a requested token limit against the server's cap. An explicit request above the cap is an error (the
 * client would otherwise get silently shorter output). No request, and 'inf' (the Realtime session default), keep
 * the stage's configured max_tokens (undefined: the engine applies it) unless that exceeds the cap: 'inf' must not
 * turn one playground Send into minutes of audio, and chat and Realtime answer alike.
 */
export function resolveMaxTokens(
  requested: number | 'inf' | undefined,
  limits: TokenLimits,
  param: string,
): number | undefined {
  if (requested === 'inf' || requested === undefined) return limits.stageDefault <= limits.cap ? undefined : limits.cap;
  if (requested > limits.cap) {
    throw new ClientInputError(
      `${param} is ${requested}, above this server's limit of ${limits.cap}: ask for at most ${limits.cap}`,
      param,
    );
  }
  return requested;
}

/**
 * The engine-facing part of a request. Seed and ignore_eos apply to the Talker too: a seeded request must be
 * reproducible end to end, and a fixed-length benchmark must not have its audio cut at the Talker's EOS.
 */
export function toEngineParams(
  fields: GenerationFields,
  maxTokens: number | undefined,
): Pick<GenerateRequest, 'sampling' | 'talkerSampling' | 'initialCodecChunkFrames' | 'ttfpTargetMs'> {
  const sampling: { -readonly [K in keyof SamplingParams]?: SamplingParams[K] } = {};
  if (maxTokens !== undefined) sampling.maxTokens = maxTokens;
  const talkerSampling: { -readonly [K in keyof SamplingParams]?: SamplingParams[K] } = {};
  if (fields.temperature !== undefined) sampling.temperature = fields.temperature;
  if (fields.top_p !== undefined) sampling.topP = fields.top_p;
  if (fields.top_k !== undefined) sampling.topK = fields.top_k;
  if (fields.repetition_penalty !== undefined) sampling.repetitionPenalty = fields.repetition_penalty;
  if (fields.frequency_penalty !== undefined) sampling.frequencyPenalty = fields.frequency_penalty;
  if (fields.presence_penalty !== undefined) sampling.presencePenalty = fields.presence_penalty;
  if (fields.logit_bias !== undefined) sampling.logitBias = fields.logit_bias;
  if (fields.seed !== undefined) sampling.seed = talkerSampling.seed = fields.seed;
  if (fields.ignore_eos !== undefined) sampling.ignoreEos = talkerSampling.ignoreEos = fields.ignore_eos;
  return {
    sampling,
    ...(Object.keys(talkerSampling).length > 0 ? { talkerSampling } : {}),
    ...(fields.initial_codec_chunk_frames !== undefined
      ? { initialCodecChunkFrames: fields.initial_codec_chunk_frames }
      : {}),
    ...(fields.ttfp_target_ms !== undefined ? { ttfpTargetMs: fields.ttfp_target_ms } : {}),
  };
}
