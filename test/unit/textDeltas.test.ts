/**
 * The Thinker's text to main a few tokens a message (stages/thinker/TextDeltas.ts): the answer's first token alone
 * (its TTFT), then TEXT_DELTA_TOKENS a message; what waits goes when the request is held for its first audio, when
 * it has waited TEXT_DELTA_MAX_MS, when the stage has nothing to run, before an error, and with the final chunk.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { TextBody } from '../../src/common/payloads.ts';
import { TEXT_DELTA_TOKENS, TextDeltas, textBody } from '../../stages/thinker/TextDeltas.ts';
import { firstAudioMessage } from '../../stages/requestEvents.ts';
import { configWith } from '../helpers/engine.ts';
import { resetSeqs } from '../helpers/fakeStage.ts';
import { spokenThinker } from '../helpers/fakeThinkerRunner.ts';

const spec = configWith('tiny-omni.yaml').stages.find((s) => s.kind === 'thinker')!;

function thinker(maxTokens: number, args: { firstPacketTokens?: number } = {}) {
  const { core, adapter } = spokenThinker(spec, maxTokens, { promptTokenIds: [1, 2, 3], ...args });
  const messages = () => adapter.to('main').map((c) => ({ body: c.body as TextBody | undefined, final: c.final }));
  const sizes = () => messages().map((m) => m.body?.tokenIds.length ?? 0);
  return { core, messages, sizes };
}

describe('text to main, a few tokens a message', () => {
  beforeEach(() => resetSeqs());

  it('sends the first token alone, then full deltas, and what is left with the final chunk', () => {
    const { core, sizes, messages } = thinker(11);
    while (core.step());
    expect(TEXT_DELTA_TOKENS).toBe(4);
    expect(sizes()).toEqual([1, 4, 4, 2]);
    expect(messages().at(-1)!.final).toBe(true);
  });

  it('sends what waits when the request is held for its first audio', () => {
    const { core, sizes } = thinker(8, { firstPacketTokens: 3 });
    while (core.step());
    expect(sizes()).toEqual([1, 2]); // held after three tokens: the two written after the first go at once
    core.onKindMessage('r', firstAudioMessage('r').body);
    while (core.step());
    expect(sizes()).toEqual([1, 2, 4, 1]);
  });
});

describe('TextDeltas', () => {
  it('sends a delta whose first token waited its longest, every one when asked, and none after a drop', () => {
    const sent: [string, number[]][] = [];
    const deltas = new TextDeltas((id, d) => sent.push([id, [...d.tokenIds]]));
    deltas.push('a', 1, undefined, true, 0); // the first: at once
    deltas.push('a', 2, undefined, false, 1);
    deltas.push('b', 7, undefined, false, 5);
    deltas.sendOlderThan(2); // a's second delta waits since 1, b's since 5
    expect(sent).toEqual([
      ['a', [1]],
      ['a', [2]],
    ]);
    deltas.push('c', 9, undefined, false, 6);
    deltas.drop('c');
    deltas.sendOlderThan(Infinity);
    expect(sent.slice(2)).toEqual([['b', [7]]]);
    expect(deltas.take('b').tokenIds).toEqual([]);
  });

  it("the final delta: what waits, then the last token; main's chunk has logprobs only when there are some", () => {
    const deltas = new TextDeltas(() => {});
    const lp = (logprob: number) => ({ logprob, top: [] });
    deltas.push('c', 3, lp(-1), false, 0);
    expect(deltas.final('c', 4, lp(-2))).toEqual({ tokenIds: [3, 4], logprobs: [lp(-1), lp(-2)] });
    expect(deltas.final('c', null, undefined)).toEqual({ tokenIds: [], logprobs: [] }); // taken by the first
    deltas.push('d', 5, undefined, false, 0);
    expect(textBody(deltas.final('d', null, undefined))).toEqual({ kind: 'text', tokenIds: [5] });
    expect(textBody({ tokenIds: [6], logprobs: [lp(-3)] })).toEqual({
      kind: 'text',
      tokenIds: [6],
      logprobs: [lp(-3)],
    });
  });
});
