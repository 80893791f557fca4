/**
 * A prompt longer than the Thinker's step budget (max_num_batched_tokens, 600 as shipped) is prefilled over several
 * Thinker steps, and each step's Talker rows go as they are computed, the Talker prefilling them beside the Thinker's
 * next step (stages/talker/thinker2talker.ts, TalkerCore `knownPositions`). The answer is the one a Thinker that
 * computes the whole prompt in one step gives: the same text, the same audio to a sample's rounding.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { collect, configWith } from '../helpers/engine.ts';

const THINKER_BUDGET = 'max_num_batched_tokens: 600 # tokens per step';
/** ~1500 prompt tokens: three Thinker steps as shipped, one with the budget raised. */
const LONG_PROMPT = Array.from({ length: 300 }, (_, i) => `line ${i} of the log`).join('; ');

const ask = (): GenerateRequest => ({
  messages: [{ role: 'user', content: LONG_PROMPT }],
  modalities: ['text', 'audio'],
  sampling: { maxTokens: 6, ignoreEos: true, seed: 5, temperature: 0.8 },
  talkerSampling: { ignoreEos: true, seed: 5 },
});

let pieces: Orchestrator;
let whole: Orchestrator;
beforeAll(async () => {
  [pieces, whole] = await Promise.all([
    Orchestrator.start(configWith('tiny-omni-text-in.yaml')),
    Orchestrator.start(
      configWith('tiny-omni-text-in.yaml', { [THINKER_BUDGET]: 'max_num_batched_tokens: 4096 # tokens per step' }),
    ),
  ]);
}, 120_000);
afterAll(async () => {
  await Promise.all([pieces?.close(), whole?.close()]);
});

describe('a long prompt prefilled in Thinker steps', () => {
  it('answers as a Thinker that computes it in one step, its rows sent as they were computed', async () => {
    const thinkerBudget = (e: Orchestrator) =>
      e.graph.stages.find((s) => s.kind === 'thinker')!.engine.maxNumBatchedTokens;
    expect([thinkerBudget(pieces), thinkerBudget(whole)]).toEqual([600, 4096]);
    const [a, b] = [await collect(pieces.generate(ask())), await collect(whole.generate(ask()))];
    expect(a.done.usage?.promptTokens).toBeGreaterThan(2 * 600);
    expect(a.done.finishReason).toBe('length');
    expect(a.text).toBe(b.text);
    expect(a.pcm.length).toBe(b.pcm.length);
    expect(a.pcm.length).toBeGreaterThan(0);
    let worst = 0;
    for (let i = 0; i < a.pcm.length; i++) worst = Math.max(worst, Math.abs(a.pcm[i] - b.pcm[i]));
    expect(worst).toBeLessThan(1e-3);
  }, 60_000);
});
