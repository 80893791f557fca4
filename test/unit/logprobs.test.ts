import { describe, expect, it } from 'vitest';
import { tokenLogprobs } from '../../stages/sampling/logprobs.ts';
import { decodeBody, encodeBody } from '../../transport/payloadCodec.ts';
import { ByteTokenizer } from '../../src/tokenizer/index.ts';
import { textLogprobs } from '../../src/tokenizer/tokenText.ts';

/** log-softmax computed the long way, in float64. */
function reference(logits: readonly number[]): number[] {
  const z = Math.log(logits.reduce((s, x) => s + Math.exp(x), 0));
  return logits.map((x) => x - z);
}

describe('tokenLogprobs', () => {
  const logits = Float32Array.from([0.5, 3, -1, 3, 2.25, -7, 1]);
  const want = reference([...logits]);

  it("gives the chosen token's log-softmax and the top k best first, equal values lower id first", () => {
    const r = tokenLogprobs(logits, 4, 3);
    expect(r.logprob).toBeCloseTo(want[4], 6);
    expect(r.top.map((t) => t.id)).toEqual([1, 3, 4]);
    r.top.forEach((t) => expect(t.logprob).toBeCloseTo(want[t.id], 6));
    const mass = want.reduce((s, x) => s + Math.exp(x), 0);
    expect(mass).toBeCloseTo(1, 9);
  });

  it('k 0 gives no alternatives; k over the vocabulary gives all, sorted', () => {
    expect(tokenLogprobs(logits, 0, 0).top).toEqual([]);
    const all = tokenLogprobs(logits, 0, 20).top;
    expect(all.map((t) => t.id)).toEqual([1, 3, 4, 6, 0, 2, 5]);
  });

  it('ids past the limit (padded logits) are neither counted nor listed', () => {
    const r = tokenLogprobs(Float32Array.from([1, 2, 50]), 1, 5, 2);
    expect(r.top.map((t) => t.id)).toEqual([1, 0]);
    expect(r.logprob).toBeCloseTo(reference([1, 2])[1], 6);
  });

  it('crosses the stage boundary and reads as token text and bytes (a partial character keeps its own bytes)', () => {
    const lp = [tokenLogprobs(logits, 1, 2), tokenLogprobs(logits, 6, 2)];
    const wire = encodeBody({ kind: 'text', tokenIds: [1, 6], logprobs: lp });
    const body = decodeBody(wire.payload, wire.tensors);
    expect(body.kind === 'text' && body.logprobs?.map((t) => t.top.map((e) => e.id))).toEqual([
      [1, 3],
      [1, 3],
    ]);
    // Ids 0-255 are the raw bytes: 0xe2 is the first byte of '€', which it cannot spell alone.
    const text = textLogprobs(new ByteTokenizer(512), [0xe2, 0x61], lp);
    expect(text[0]).toMatchObject({ token: '\ufffd', bytes: [0xe2], logprob: lp[0].logprob });
    expect(text[1]).toMatchObject({ token: 'a', bytes: [0x61] });
    expect(text[1].top.map((t) => t.bytes)).toEqual([[1], [3]]);
  });
});
