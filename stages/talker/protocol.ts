/** The Talker's own part of the stage protocol: its `add` arguments and its stats section. */
import type { Static } from '@sinclair/typebox';
import { Count, PositiveCount } from '../../src/common/wireValues.ts';
import { kindFactsSchema } from '../../src/common/modelFacts.ts';
import type { PrefixCacheStats as PrefixStats } from '../../src/sched/PrefixCache.ts';
import type { PlaybackArgs } from '../../src/worker/messages.ts';
import { kindSectionOf } from '../kindStats.ts';

export interface TalkerArgs extends PlaybackArgs {
  /** Per-request override of the initial codec chunk. */
  readonly initialCodecChunkFrames?: number;
  /** First-packet hold (chunkPolicy.ts firstPacketHoldTokens): the first chunk takes at most those tokens' frames. */
  readonly firstPacketTokens?: number;
  /**
   * Left-context frames to send with each chunk, when not the chunk policy's: 0 when the request's Code2Wav
   * instance is stateful (its state already holds the context).
   */
  readonly codecLeftContextFrames?: number;
}

export interface TalkerStats {
  /** With a prefix cache (engine.prefix_cache). */
  readonly prefix?: PrefixStats;
}

export const talkerStatsOf = kindSectionOf<TalkerStats>();

/** What a loaded talker model is, as its stage reports it in READY (the envelope: src/common/modelFacts.ts). */
export const TalkerFactsSchema = kindFactsSchema('talker', {
  conditionDim: PositiveCount,
  numCodebooks: PositiveCount,
  framesPerToken: PositiveCount,
  kvBytesPerToken: Count,
});
export type TalkerFacts = Static<typeof TalkerFactsSchema>;
