/**
 * What a stage's loaded model is, as the stage reports it in READY. The engine and the server read these facts
 * (the vocoder's sample rate, samples per codec frame) instead of guessing them from the config: a
 * bring-your-own model says what it is only once it is loaded.
 */
import { ModalitySchema } from './modality.ts';
import { Type, type Static } from '@sinclair/typebox';
import { Count, List, PositiveCount, ShortText } from './wireValues.ts';

const closed = { additionalProperties: false } as const;

export const ModelFactsSchema = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('thinker'),
      vocabSize: PositiveCount,
      /** 0 for a text-only decoder that takes input_ids and has no hidden output (a GGUF import, an Optimum export). */
      hiddenSize: Count,
      /** -1 when the model names none (an export without config.json): only stop tokens and max_tokens end it. */
      eosTokenId: Type.Integer({ minimum: -1, maximum: Number.MAX_SAFE_INTEGER }),
      /** KV cache bytes one position costs (keys and values, every layer). */
      kvBytesPerToken: Count,
      /** What a bring-your-own model lacks (inputsEmbeds, hiddenStates, embeddings): it serves text only. */
      lacks: Type.Optional(List(ShortText, 16)),
    },
    closed,
  ),
  Type.Object(
    {
      kind: Type.Literal('talker'),
      conditionDim: PositiveCount,
      numCodebooks: PositiveCount,
      framesPerToken: PositiveCount,
      kvBytesPerToken: Count,
    },
    closed,
  ),
  Type.Object(
    {
      kind: Type.Literal('code2wav'),
      numCodebooks: PositiveCount,
      sampleRateHz: Type.Integer({ minimum: 1000, maximum: 384_000 }),
      samplesPerFrame: PositiveCount,
      receptiveFieldFrames: Count,
      /** The vocoder carries state between chunks (each frame decoded once); false: left context decoded again. */
      stateful: Type.Optional(Type.Boolean()),
    },
    closed,
  ),
  Type.Object(
    {
      kind: Type.Literal('encoder'),
      modality: ModalitySchema,
      /** Width of one row (the Thinker's hidden size). */
      outputSize: PositiveCount,
      /** The encoder's identity in cache keys (model hash, preprocessing version, width). */
      identity: ShortText,
      /** Vision encoders: how images are cut. */
      patchSize: Type.Optional(PositiveCount),
      mergeSize: Type.Optional(PositiveCount),
    },
    closed,
  ),
  Type.Object(
    {
      kind: Type.Literal('tts'),
      /** The rate of the audio the stage sends (the voice's audio resampled to it). */
      sampleRateHz: PositiveCount,
      /** A nominal frame of that audio (what playback plans count in). */
      samplesPerFrame: PositiveCount,
      /** The voice's own rate. */
      voiceSampleRateHz: PositiveCount,
    },
    closed,
  ),
]);

/**
 * What a stage's loaded model is, as the stage reports it in READY (checked there, like every value from another
 * process: a vocoder's rate of NaN would reach every client's audio).
 */
export type ModelFacts = Static<typeof ModelFactsSchema>;

/** The audio a pipeline returns, from its vocoder's facts. */
export interface AudioOutputFacts {
  readonly sampleRateHz: number;
  readonly samplesPerFrame: number;
  /** Codec frames the Talker makes per text token (maps played audio back to the text it voiced); null unknown. */
  readonly framesPerToken: number | null;
}
