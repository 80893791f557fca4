/**
 * The Thinker's own part of the stage protocol: its `add` arguments and its stats section (the messages main sends it
 * are kind-neutral request events, ../requestEvents.ts). The worker loop and the engine carry these without reading
 * them; main reads the stats through the accessor here.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Count, List, PositiveCount, ShortText } from '../../src/common/wireValues.ts';
import { kindFactsSchema } from '../../src/common/modelFacts.ts';
import type { GrammarSpec, PromptPrefix } from '../../src/common/engine.ts';
import type { GrammarStats } from '../../src/grammar/index.ts';
import type { PrefixCacheStats as PrefixStats } from '../../src/sched/PrefixCache.ts';
import type { EcDrop, ThinkerMediaPlan } from '../../src/worker/messages.ts';
import { kindSectionOf } from '../kindStats.ts';

export interface ThinkerArgs {
  /** The prompt as token ids (media placeholders expanded). */
  readonly promptTokenIds: readonly number[];
  /** For a request with media: the position map and which encoder sends each item. */
  readonly media?: ThinkerMediaPlan;
  /** EC-store copies to forget before taking this request's items (evicted, expired, refused). */
  readonly ecDrop?: readonly EcDrop[];
  /** First-packet hold (chunkPolicy.ts firstPacketHoldTokens): tokens to write before waiting for `first_audio`. */
  readonly firstPacketTokens?: number;
  /** The session key of a voice prefill and its answers (GenerateRequest.prefix). */
  readonly prefix?: PromptPrefix;
  /** Constrained decoding (GenerateRequest.grammar): the spec, compiled by the Thinker (cached by spec). */
  readonly grammar?: GrammarSpec;
  /** The request asked for logprobs (GenerateRequest.logprobs): the top alternatives to report with each (0-20). */
  readonly logprobs?: number;
  /** A spoken answer: the audio each of its tokens voices (ms), which speech lead reads (src/sched/SpeechLead.ts). */
  readonly speechMsPerToken?: number;
}

/** With an EC store: items taken from its own copies, from Redis, or lost; copies held. */
export interface ThinkerEcStats {
  readonly localTakes: number;
  readonly remoteTakes: number;
  readonly lostTakes: number;
  readonly copies: number;
  readonly copyBytes: number;
}

export interface ThinkerStats {
  /** With a prefix cache (engine.prefix_cache). */
  readonly prefix?: PrefixStats;
  readonly ec?: ThinkerEcStats;
  /** After its first constrained request: grammars compiled (and their time), cache hits. */
  readonly grammar?: GrammarStats;
}

/** A Thinker's stats section (empty for another kind's report, which has neither part). */
export const thinkerStatsOf = kindSectionOf<ThinkerStats>();

/** What a loaded thinker model is, as its stage reports it in READY (the envelope: src/common/modelFacts.ts). */
export const ThinkerFactsSchema = kindFactsSchema('thinker', {
  vocabSize: PositiveCount,
  /** 0 for a text-only decoder that takes input_ids and has no hidden output (a GGUF import, an Optimum export). */
  hiddenSize: Count,
  /** -1 when the model names none (an export without config.json): only stop tokens and max_tokens end it. */
  eosTokenId: Type.Integer({ minimum: -1, maximum: Number.MAX_SAFE_INTEGER }),
  /** KV cache bytes one position costs (keys and values, every layer). */
  kvBytesPerToken: Count,
  /** What a bring-your-own model lacks (inputsEmbeds, hiddenStates, embeddings): it serves text only. */
  lacks: Type.Optional(List(ShortText, 16)),
});
export type ThinkerFacts = Static<typeof ThinkerFactsSchema>;
