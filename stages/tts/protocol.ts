/** The tts stage's own part of the stage protocol: its `add` arguments and its stats section. */
import type { Static } from '@sinclair/typebox';
import { PositiveCount } from '../../src/common/wireValues.ts';
import { kindFactsSchema } from '../../src/common/modelFacts.ts';
import type { PlaybackArgs } from '../../src/worker/messages.ts';
import { kindSectionOf, type KindSection } from '../kindStats.ts';

export type TtsArgs = PlaybackArgs;

/** Since start: what the voice made and what it cost (their ratio: the stage's real-time factor). */
export interface TtsStats {
  /** Sentences (phrases) synthesized. */
  readonly phrases: number;
  /** Seconds of audio made. */
  readonly audioSeconds: number;
  /** Milliseconds the voice model ran. */
  readonly computeMs: number;
  /** Phoneme symbols the voice's map does not hold, left out (non-zero: the voice mispronounces some text). */
  readonly missingPhonemes: number;
  /** Phrases cut before their sentence ended because their listener would have run dry (the lead rule, lead.ts). */
  readonly earlyCuts: number;
}

export type TtsKindStats = KindSection<'tts', TtsStats>;

export const ttsStatsOf = kindSectionOf<TtsKindStats>();

/** What a loaded tts model is, as its stage reports it in READY (the envelope: src/common/modelFacts.ts). */
export const TtsFactsSchema = kindFactsSchema('tts', {
  /** The rate of the audio the stage sends (the voice's audio resampled to it). */
  sampleRateHz: PositiveCount,
  /** A nominal frame of that audio (what playback plans count in). */
  samplesPerFrame: PositiveCount,
  /** The voice's own rate. */
  voiceSampleRateHz: PositiveCount,
});
export type TtsFacts = Static<typeof TtsFactsSchema>;
