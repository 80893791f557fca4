/**
 * How the Thinker ends its text (stages/sampling/stopping.ts, the one stop rule): a stop token (EOS unless
 * ignore_eos, or one of stop_token_ids) ends it with `stop` and is not sent; max_tokens ends it with `length` after
 * the token that reaches it, which is sent in the final chunk. Driven through ThinkerCore with a fake runner that
 * samples token 300 at every step.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { SamplingParams } from '../../src/common/samplingParams.ts';
import type { TextBody } from '../../src/common/payloads.ts';
import { ThinkerCore } from '../../stages/thinker/ThinkerCore.ts';
import { configWith } from '../helpers/engine.ts';
import { FakeAdapter, resetSeqs, stageContext } from '../helpers/fakeStage.ts';
import { KvLengthRunner } from '../helpers/fakeThinkerRunner.ts';

const spec = configWith('tiny-omni-text-in.yaml').stages.find((s) => s.kind === 'thinker')!;
const SAMPLED = 300;

class EosIsSampled extends KvLengthRunner {
  override readonly eosTokenId: number = SAMPLED;
}

async function answer(runner: KvLengthRunner, sampling: Partial<SamplingParams>) {
  const adapter = new FakeAdapter();
  const ctx = stageContext(spec, adapter);
  const core = new ThinkerCore(ctx, runner);
  core.add({
    type: 'add',
    requestId: 'r',
    sampling: { ...spec.defaultSamplingParams, ...sampling },
    downstream: [{ instance: 'main', stageId: 'main' }],
    upstreams: [],
    args: { promptTokenIds: [1, 2, 3] },
    firstChunkDeadline: Date.now() + 30_000,
  });
  let steps = 0;
  while (core.step()) if (++steps > 100) throw new Error('the thinker never stops');
  // The finished message follows once the final chunk's send settles.
  await vi.waitFor(() => expect(ctx.posted.some((m) => m.type === 'finished')).toBe(true));
  const chunks = adapter.to('main');
  const finished = ctx.posted.find((m) => m.type === 'finished');
  return {
    tokens: chunks.flatMap((c) => (c.body as TextBody | undefined)?.tokenIds ?? []),
    finalTokens: (chunks.at(-1)?.body as TextBody | undefined)?.tokenIds ?? [],
    reason: chunks.at(-1)?.final ? chunks.at(-1)!.finishReason : undefined,
    finished: finished?.type === 'finished' ? finished.finishReason : undefined,
  };
}

describe('the Thinker stop rule', () => {
  beforeEach(() => resetSeqs());

  it('ends at max_tokens with length, the last token sent in the final chunk', async () => {
    const r = await answer(new KvLengthRunner(), { maxTokens: 4, ignoreEos: false, stopTokenIds: [] });
    expect(r.tokens).toEqual([SAMPLED, SAMPLED, SAMPLED, SAMPLED]);
    // The first token went at once; the next two waited for a fuller text message and go with the last.
    expect(r.finalTokens).toEqual([SAMPLED, SAMPLED, SAMPLED]);
    expect(r.reason).toBe('length');
    expect(r.finished).toBe('length');
  });

  it('ends at a stop_token_ids token with stop, without sending it', async () => {
    const r = await answer(new KvLengthRunner(), { maxTokens: 4, stopTokenIds: [SAMPLED] });
    expect(r.tokens).toEqual([]);
    expect(r.reason).toBe('stop');
    expect(r.finished).toBe('stop');
  });

  it('ends at EOS with stop unless ignore_eos, which runs on to max_tokens', async () => {
    const eos = await answer(new EosIsSampled(), { maxTokens: 4, ignoreEos: false, stopTokenIds: [] });
    expect(eos.tokens).toEqual([]);
    expect(eos.reason).toBe('stop');
    const ignored = await answer(new EosIsSampled(), { maxTokens: 3, ignoreEos: true, stopTokenIds: [] });
    expect(ignored.tokens).toEqual([SAMPLED, SAMPLED, SAMPLED]);
    expect(ignored.reason).toBe('length');
  });
});
