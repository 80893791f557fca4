/** The tts stage's own part of the stage protocol: its `add` arguments and its stats section. */
import type { PlaybackPlan } from '../../src/worker/messages.ts';
import { kindSectionOf } from '../kindStats.ts';

export interface TtsArgs {
  /** Requests with audio out: what it schedules the audio by (src/sched/playback.ts). */
  readonly playback?: PlaybackPlan;
}

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
}

export interface TtsKindStats {
  readonly tts?: TtsStats;
}

export const ttsStatsOf = kindSectionOf<TtsKindStats>();
