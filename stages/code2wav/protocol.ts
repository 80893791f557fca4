/** Code2Wav's own part of the stage protocol: its `add` arguments and its stats section. */
import type { PlaybackPlan } from '../../src/worker/messages.ts';
import { kindSectionOf } from '../kindStats.ts';

export interface Code2WavArgs {
  /** Requests with audio out: what it schedules the audio by (src/sched/playback.ts). */
  readonly playback?: PlaybackPlan;
}

/** Frames run through the vocoder and frames of audio sent, since start (their ratio: work per frame). */
export interface Code2WavStats {
  readonly framesDecoded: number;
  readonly audioFrames: number;
  /** Requests whose vocoder state is held (a stateful vocoder; 0 otherwise). */
  readonly states: number;
}

export interface Code2WavKindStats {
  readonly code2wav?: Code2WavStats;
}

export const code2wavStatsOf = kindSectionOf<Code2WavKindStats>();
