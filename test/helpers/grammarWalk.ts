/**
 * Answers "a model with random weights" would give under a grammar, without a model: random logits each step,
 * sampled at temperature 1 through the real sampler with the grammar's mask, the grammar advanced on every token,
 * until it accepts a stop token or the cap. What the model would have said never matters under a grammar: this
 * is the strongest case (every token of the vocabulary equally likely before the mask).
 */
import type { RequestGrammar } from '../../src/grammar/index.ts';
import type { SamplingParams } from '../../src/common/samplingParams.ts';
import { Prng } from '../../stages/sampling/Prng.ts';
import { sampleToken } from '../../stages/sampling/sampleToken.ts';

export const RANDOM_SAMPLING: SamplingParams = {
  temperature: 1,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
  frequencyPenalty: 0,
  presencePenalty: 0,
  logitBias: {},
  maxTokens: 4096,
  seed: 0,
  ignoreEos: false,
  stopTokenIds: [],
};

export interface Walk {
  readonly tokenIds: number[];
  /** The grammar accepted a stop token (the answer is complete). */
  readonly terminated: boolean;
}

export function randomWalk(grammar: RequestGrammar, vocabSize: number, seed: number, maxTokens = 600): Walk {
  const rng = new Prng(seed);
  const logits = new Float32Array(vocabSize);
  const tokenIds: number[] = [];
  for (let step = 0; step < maxTokens; step++) {
    for (let i = 0; i < vocabSize; i++) logits[i] = rng.nextFloat() * 4;
    const id = sampleToken(logits, RANDOM_SAMPLING, rng, { allowed: grammar.mask() });
    if (!grammar.accept(id)) throw new Error(`the grammar refused token ${id}, which its own mask allowed`);
    if (grammar.terminated) return { tokenIds, terminated: true };
    tokenIds.push(id);
  }
  return { tokenIds, terminated: false };
}
