/** The runners and sampling a critical-path limit runs on (bench/limit/runLimit.ts). */
import type { Code2WavRunner, SamplingParams, TalkerRunner, ThinkerRunner } from '../../src/index.ts';

export interface Runners {
  readonly thinker: ThinkerRunner;
  readonly talker: TalkerRunner;
  readonly code2wav: Code2WavRunner;
}

export interface PacketSampling {
  readonly thinker: SamplingParams;
  readonly talker: SamplingParams;
}
