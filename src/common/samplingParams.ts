/**
 * A request's sampling knobs, as main sends them to the stages in `add` (the stage graph's defaultSamplingParams
 * has the same shape): declared once, as a TypeBox schema that both types and checks them.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Count, List } from './wireValues.ts';

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
