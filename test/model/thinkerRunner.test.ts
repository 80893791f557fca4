/**
 * The Thinker runner end to end: batching must not change what a sequence decodes, seeds make sampling
 * reproducible, and the outputs a Talker needs (embeds, accept hidden states) come back per position.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createThinkerRunner } from '../../stages/runners.ts';
import type { SamplingParams } from '../../src/common/samplingParams.ts';
import { WARMUP_SEQ } from '../../stages/models/warmUp.ts';
import type { ThinkerBatchItem, ThinkerRunner } from '../../stages/types.ts';
import { promptIds, sampling, smallThinker, tempModelsDir, thinkerSpec } from './helpers.ts';

let models: ReturnType<typeof tempModelsDir>;
let runner: ThinkerRunner;

beforeAll(async () => {
  models = tempModelsDir();
  runner = await createThinkerRunner({ model: thinkerSpec() }, models.dir);
});

afterAll(async () => {
  await runner?.close();
  models?.cleanup();
});

/**
 * Decodes every prompt for numTokens tokens. Prefills run one request per step (as a scheduler would
 * admit them), then all live sequences decode together in one batched step per token.
 */
function decodeTogether(
  prompts: number[][],
  numTokens: number,
  params: (i: number) => SamplingParams,
  tag: string,
): number[][] {
  const ids = prompts.map((_, i) => `${tag}-${i}`);
  const tokens: number[][] = prompts.map((p, i) => {
    const [out] = runner.execute([
      { seqId: ids[i], tokenIds: p, numTokens: p.length, sample: true, sampling: params(i) },
    ]);
    return [out.tokenId!];
  });
  for (let t = 1; t < numTokens; t++) {
    const items: ThinkerBatchItem[] = prompts.map((_, i) => ({
      seqId: ids[i],
      tokenIds: [tokens[i].at(-1)!],
      numTokens: 1,
      sample: true,
      sampling: params(i),
    }));
    runner.execute(items).forEach((out, i) => tokens[i].push(out.tokenId!));
  }
  ids.forEach((id) => runner.free(id));
  return tokens;
}

describe('thinker runner', () => {
  it('a batched decode of 4 requests of different lengths gives the tokens each gives alone (greedy)', () => {
    const prompts = [promptIds(5, 1), promptIds(17, 2), promptIds(9, 3), promptIds(30, 4)];
    const together = decodeTogether(prompts, 24, () => sampling(), 'batch');
    const alone = prompts.map((p, i) => decodeTogether([p], 24, () => sampling(), `alone${i}`)[0]);
    expect(together).toEqual(alone);
    // Different prompts lead to different answers: the comparison above is not trivially equal.
    expect(new Set(alone.map((t) => t.join(','))).size).toBe(4);
  });

  it('a long sequence decoding beside short ones runs apart (groupByNumTokens) and changes no token', () => {
    // 400 positions are past twice 5 plus 128: the step's decodes run as two runs, each batch fed back step to step.
    const prompts = [promptIds(5, 5), promptIds(400, 6), promptIds(17, 7)];
    const together = decodeTogether(prompts, 12, () => sampling(), 'long');
    const alone = prompts.map((p, i) => decodeTogether([p], 12, () => sampling(), `longAlone${i}`)[0]);
    expect(together).toEqual(alone);
    expect(new Set(alone.map((t) => t.join(','))).size).toBe(3);
  });

  it('mixes a prefill chunk and decodes in one execute call', () => {
    const [first] = runner.execute([
      { seqId: 'm1', tokenIds: promptIds(6, 5), numTokens: 6, sample: true, sampling: sampling() },
    ]);
    const outs = runner.execute([
      { seqId: 'm1', tokenIds: [first.tokenId!], numTokens: 1, sample: true, sampling: sampling() },
      { seqId: 'm2', tokenIds: promptIds(11, 6), numTokens: 11, sample: true, sampling: sampling() },
    ]);
    const alone = decodeTogether([promptIds(6, 5)], 2, () => sampling(), 'm1alone')[0];
    const alone2 = decodeTogether([promptIds(11, 6)], 1, () => sampling(), 'm2alone')[0];
    expect([first.tokenId, outs[0].tokenId]).toEqual(alone);
    expect(outs[1].tokenId).toBe(alone2[0]);
    expect(outs[1].embeds.length).toBe(11 * smallThinker.hiddenSize);
    expect(outs[1].hidden.length).toBe(11 * smallThinker.hiddenSize);
    expect(outs[1].embeds).toEqual(runner.embed(promptIds(11, 6)));
    runner.free('m1');
    runner.free('m2');
  });

  it('the same seed gives the same tokens; with temperature > 0 different seeds give different tokens', () => {
    const prompt = [promptIds(8, 7)];
    const hot = (seed: number) => () => sampling({ temperature: 24, seed });
    const a = decodeTogether(prompt, 32, hot(1), 's1')[0];
    const b = decodeTogether(prompt, 32, hot(1), 's1again')[0];
    const c = decodeTogether(prompt, 32, hot(2), 's2')[0];
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    // And sampling is per sequence: a seeded sequence samples the same inside a batch of others.
    const mixed = decodeTogether(
      [prompt[0], promptIds(12, 8), promptIds(3, 9)],
      32,
      (i) => sampling({ temperature: 24, seed: i === 0 ? 1 : 50 + i }),
      'mix',
    );
    expect(mixed[0]).toEqual(a);
  });

  it('takes inputs_embeds rows in place of token ids', () => {
    const ids = promptIds(7, 10);
    const viaIds = runner.execute([
      { seqId: 'e1', tokenIds: ids, numTokens: 7, sample: true, sampling: sampling() },
    ])[0];
    const viaEmbeds = runner.execute([
      { seqId: 'e2', inputsEmbeds: runner.embed(ids), numTokens: 7, sample: true, sampling: sampling() },
    ])[0];
    expect(viaEmbeds.tokenId).toBe(viaIds.tokenId);
    expect(viaEmbeds.hidden).toEqual(viaIds.hidden);
    runner.free('e1');
    runner.free('e2');
  });

  it('masks end-of-text under ignoreEos', () => {
    const eos = runner.eosTokenId;
    expect(eos).toBe(256);
    // Near-uniform sampling reaches end-of-text within a few hundred tokens (p = 1/512 per token).
    const uniform = (ignoreEos: boolean, seed: number) => () => sampling({ ignoreEos, temperature: 1e6, seed });
    const prompt = [promptIds(4, 11)];
    let seed = 0;
    let hit = -1;
    while (hit < 0 && seed < 10) hit = decodeTogether(prompt, 1000, uniform(false, ++seed), 'eos')[0].indexOf(eos);
    expect(hit).toBeGreaterThanOrEqual(0);
    const masked = decodeTogether(prompt, hit + 1, uniform(true, seed), 'noeos')[0];
    expect(masked).not.toContain(eos);
  });

  it('a keep-warm step leaves no sequence behind and changes no answer, nor a sequence held meanwhile', () => {
    const prompt = promptIds(23, 5);
    const [before] = decodeTogether([prompt], 8, () => sampling(), 'cold');
    runner.warm();
    expect(runner.kvBytes(WARMUP_SEQ)).toBe(0);
    // A sequence held while the Thinker idles (a prefix-cache entry is one), then continued.
    runner.execute([
      { seqId: 'held', tokenIds: prompt.slice(0, 10), numTokens: 10, sample: false, sampling: sampling() },
    ]);
    runner.warm();
    const [out] = runner.execute([
      {
        seqId: 'held',
        tokenIds: prompt.slice(10),
        numTokens: prompt.length - 10,
        sample: true,
        sampling: sampling(),
      },
    ]);
    runner.free('held');
    expect(runner.kvBytes(WARMUP_SEQ)).toBe(0);
    expect(out.tokenId).toBe(before[0]);
    expect(decodeTogether([prompt], 8, () => sampling(), 'warm')[0]).toEqual(before);
  });
});
