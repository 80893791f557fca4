import { describe, expect, it } from 'vitest';
import { Thinker2Talker } from '../../stages/talker/thinker2talker.ts';
import { Talker2Code2Wav } from '../../stages/code2wav/talker2code2wav.ts';

const D = 2;
/** Rows whose values encode (position, which half) so the test can read back where each came from. */
function rows(start: number, n: number, half: number): Float32Array {
  return Float32Array.from({ length: n * D }, (_, i) => (start + Math.floor(i / D)) * 10 + half);
}

describe('thinker2talker', () => {
  it('async: the first chunk holds the prompt rows and the first token row, then one row per token', () => {
    const p = new Thinker2Talker(D, 3, true);
    p.onStep(0, 3, rows(0, 3, 1), rows(0, 3, 2), Float32Array.of(99, 99));
    const first = p.take(false)!;
    expect(first.numRows).toBe(4);
    expect(first.promptRows).toBe(3);
    // Row 3 = [embedding of the sampled token | hidden state of the position that sampled it (2)].
    expect(Array.from(first.rows.subarray(3 * 2 * D))).toEqual([99, 99, 22, 22]);
    p.onStep(3, 1, rows(3, 1, 1), rows(3, 1, 2), Float32Array.of(77, 77));
    const second = p.take(false)!;
    expect(second.numRows).toBe(1);
    expect(second.promptRows).toBeUndefined();
    expect(p.take(false)).toBeNull();
    expect(p.take(true)!.numRows).toBe(0); // the final chunk goes even when empty
  });

  it('sends each piece of a chunked prefill as it is computed, the prompt length with the first', () => {
    const p = new Thinker2Talker(D, 4, true);
    p.onStep(0, 2, rows(0, 2, 1), rows(0, 2, 2), null);
    const first = p.take(false)!;
    expect([first.numRows, first.promptRows]).toEqual([2, 4]);
    expect(Array.from(first.rows)).toEqual([1, 1, 2, 2, 11, 11, 12, 12]);
    expect(p.take(false)).toBeNull();
    p.onStep(2, 2, rows(2, 2, 1), rows(2, 2, 2), Float32Array.of(5, 5));
    const second = p.take(false)!;
    expect([second.numRows, second.promptRows]).toEqual([3, undefined]);
    expect(Array.from(second.rows.subarray(2 * 2 * D))).toEqual([5, 5, 32, 32]);
  });

  it('does not resend prompt rows when a preempted request recomputes them', () => {
    const p = new Thinker2Talker(D, 2, true);
    p.onStep(0, 2, rows(0, 2, 1), rows(0, 2, 2), Float32Array.of(1, 1));
    p.take(false);
    p.onStep(0, 3, rows(0, 3, 1), rows(0, 3, 2), Float32Array.of(2, 2)); // recompute of prompt + token 0
    expect(p.take(false)!.numRows).toBe(1);
  });

  it('hands a cached prefix over as given, then the rows computed after it; a recompute resends none', () => {
    const p = new Thinker2Talker(D, 4, true);
    const cached = new Float32Array(3 * 2 * D).map((_, i) => 1000 + i); // 3 conditioning rows [embed | hidden]
    p.onCachedPrompt(3, cached);
    p.onStep(3, 1, rows(3, 1, 1), rows(3, 1, 2), Float32Array.of(7, 7));
    const first = p.take(false)!;
    expect(first.promptRows).toBe(4);
    expect(Array.from(first.rows.subarray(0, 3 * 2 * D))).toEqual(Array.from(cached));
    expect(Array.from(first.rows.subarray(3 * 2 * D))).toEqual([31, 31, 32, 32, 7, 7, 32, 32]);
    p.onCachedPrompt(3, cached); // (a preempted request adopting again) nothing twice
    p.onStep(0, 4, rows(0, 4, 1), rows(0, 4, 2), null);
    expect(p.take(false)).toBeNull();
  });

  it('sync: nothing until the final chunk, which carries every row', () => {
    const p = new Thinker2Talker(D, 2, false);
    p.onStep(0, 2, rows(0, 2, 1), rows(0, 2, 2), Float32Array.of(1, 1));
    p.onStep(2, 1, rows(2, 1, 1), rows(2, 1, 2), Float32Array.of(2, 2));
    expect(p.take(false)).toBeNull();
    const all = p.take(true)!;
    expect(all.numRows).toBe(4);
    expect(all.promptRows).toBe(2);
  });
});

describe('talker2code2wav', () => {
  const policy = {
    initialCodecChunkFrames: null,
    codecChunkFrames: 5,
    codecLeftContextFrames: 3,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 1000,
    maxChunkWaitMs: 10_000,
    ttfpTargetMs: null,
    firstPacketHold: true,
    firstAudioFirst: true,
    speechLeadMs: null,
    speechLeadMinAnswers: 12,
    speakingSlice: 4,
    firstPrefillSplit: 0.45,
  };
  const frame = (t: number) => Int32Array.from({ length: 2 }, (_, q) => t * 100 + q);

  it('sends IC, then growing chunks with left context in [Q][T] layout, then the rest at the end', () => {
    const p = new Talker2Code2Wav(policy, 2, 2, true);
    const out = [];
    for (let t = 0; t < 13; t++) {
      p.push(frame(t));
      const c = p.take(false);
      if (c) out.push(c);
    }
    const last = p.take(true);
    if (last) out.push(last);
    // New frames per chunk: 2 (IC), 2, 4, then the last 5, each after 2-3 frames of context (numFrames counts both).
    expect(out.map((c) => [c.numFrames, c.contextFrames])).toEqual([
      [2, 0],
      [4, 2],
      [7, 3],
      [8, 3],
    ]);
    // Codebook 0 of chunk 2 = frames 1..7 (3 context + 4 new).
    expect(Array.from(out[2].codes.subarray(0, 7))).toEqual([100, 200, 300, 400, 500, 600, 700]);
    expect(Array.from(out[2].codes.subarray(7))).toEqual([101, 201, 301, 401, 501, 601, 701]);
    // Every frame's samples are produced exactly once: new frames add up to all frames.
    expect(out.reduce((n, c) => n + c.numFrames - c.contextFrames, 0)).toBe(13);
  });

  it('sync: one final chunk with every frame and no context', () => {
    const p = new Talker2Code2Wav(policy, 2, 2, false);
    for (let t = 0; t < 13; t++) {
      p.push(frame(t));
      expect(p.take(false)).toBeNull();
    }
    const c = p.take(true)!;
    expect([c.numFrames, c.contextFrames]).toEqual([13, 0]);
  });
});
