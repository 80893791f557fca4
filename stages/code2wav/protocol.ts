/** Code2Wav's own part of the stage protocol: its `add` arguments and its stats section. */
import { Type, type Static } from '@sinclair/typebox';
import { Count, PositiveCount } from '../../src/common/wireValues.ts';
import { kindFactsSchema } from '../../src/common/modelFacts.ts';
import type { PlaybackArgs } from '../../src/worker/messages.ts';
import { kindSectionOf, type KindSection } from '../kindStats.ts';

export type Code2WavArgs = PlaybackArgs;

/** Frames run through the vocoder and frames of audio sent, since start (their ratio: work per frame). */
export interface Code2WavStats {
  readonly framesDecoded: number;
  readonly audioFrames: number;
  /** Requests whose vocoder state is held (a stateful vocoder; 0 otherwise). */
  readonly states: number;
}

export type Code2WavKindStats = KindSection<'code2wav', Code2WavStats>;

export const code2wavStatsOf = kindSectionOf<Code2WavKindStats>();

/** What a loaded code2wav model is, as its stage reports it in READY (the envelope: src/common/modelFacts.ts). */
export const Code2WavFactsSchema = kindFactsSchema('code2wav', {
  numCodebooks: PositiveCount,
  sampleRateHz: Type.Integer({ minimum: 1000, maximum: 384_000 }),
  samplesPerFrame: PositiveCount,
  receptiveFieldFrames: Count,
  /** The vocoder carries state between chunks (each frame decoded once); false: left context decoded again. */
  stateful: Type.Optional(Type.Boolean()),
});
export type Code2WavFacts = Static<typeof Code2WavFactsSchema>;
