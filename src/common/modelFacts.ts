/**
 * What a stage's loaded model is, as the stage reports it in READY. The engine and the server read these facts
 * (the vocoder's sample rate, samples per codec frame) instead of guessing them from the config: a
 * bring-your-own model says what it is only once it is loaded.
 */
import { Type, type TProperties } from '@sinclair/typebox';
import { List, ShortText } from './wireValues.ts';

/** One fact's value: a finite number (NaN and infinities are refused), a flag, a short text or a list of them. */
const FactValueSchema = Type.Union([Type.Number(), Type.Boolean(), ShortText, List(ShortText, 16)]);
export type FactValue = number | boolean | string | readonly string[];

/**
 * The envelope of every kind's facts, which the READY message checks in whatever process receives it: the kind's
 * name and values a wire carries (a vocoder's rate of NaN would reach every client's audio). What each kind reports
 * is its own schema, in its folder (stages/<kind>/protocol.ts), which its descriptor reads them through (factsIn).
 */
export const ModelFactsSchema = Type.Unsafe<ModelFacts>(
  Type.Object({ kind: ShortText }, { additionalProperties: FactValueSchema, maxProperties: 32 }),
);

/**
 * A kind's own facts schema (in its stages/<kind>/protocol.ts): its name and its facts, closed (a misspelt fact is
 * refused). Its values must be of the envelope's (finite numbers, flags, short texts).
 */
export function kindFactsSchema<K extends string, P extends TProperties>(kind: K, facts: P) {
  return Type.Object({ kind: Type.Literal(kind), ...facts }, { additionalProperties: false });
}

/** What a stage's loaded model is, as the stage reports it in READY: its kind's facts, in the envelope. */
export interface ModelFacts {
  readonly kind: string;
  readonly [fact: string]: FactValue;
}

/** The audio a pipeline returns, from its vocoder's facts. */
export interface AudioOutputFacts {
  readonly sampleRateHz: number;
  readonly samplesPerFrame: number;
  /** Codec frames the Talker makes per text token (maps played audio back to the text it voiced); null unknown. */
  readonly framesPerToken: number | null;
}
