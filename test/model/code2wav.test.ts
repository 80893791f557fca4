/**
 * Streaming Code2Wav must reproduce the offline decode: chunks with enough left context (the stateless graph), or
 * chunks carried by the vocoder's state (the streaming graph), concatenated, give the same samples (no loss or
 * duplication at boundaries), and batching chunks of different lengths (right-padded) changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCode2WavRunner } from '../../stages/runners.ts';
import type { Code2WavItem, Code2WavRunner } from '../../stages/types.ts';
import { code2wavSpec, maxAbsDiff, smallCode2Wav, tempModelsDir } from './helpers.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';
import {
  chunkPlan,
  maxPcm16Diff,
  randomCodes as randomCodesOf,
  randomSplit,
  sliceFrames,
  splitItems,
} from './codeFrames.ts';

const Q = smallCode2Wav.numCodebooks;
let models: ReturnType<typeof tempModelsDir>;
/** The stateless graph (`streaming_state: false`): left context re-decoded with every chunk. */
let runner: Code2WavRunner;
/** The streaming graph, same seed and weights. */
let stateful: Code2WavRunner;

beforeAll(async () => {
  models = tempModelsDir();
  runner = await createCode2WavRunner(
    { model: code2wavSpec(7, { ...smallCode2Wav, streamingState: false }) },
    models.dir,
  );
  stateful = await createCode2WavRunner({ model: code2wavSpec() }, models.dir);
});

afterAll(async () => {
  await runner?.close();
  await stateful?.close();
  models?.cleanup();
});

const randomCodes = (numFrames: number, seed: number) => randomCodesOf(Q, smallCode2Wav.codebookSize, numFrames, seed);

/** The streaming plan: an initial chunk, then fixed chunks, each re-sending up to leftContext frames. */
function chunkItems(
  codes: Int32Array,
  numFrames: number,
  initial: number,
  chunk: number,
  leftContext: number,
  seqId: string,
): Code2WavItem[] {
  return splitItems(codes, numFrames, chunkPlan(numFrames, initial, chunk), leftContext, seqId);
}

describe('stateless code2wav', () => {
  const numFrames = 4 + 25 * 3 + 11;
  const codes = randomCodes(numFrames, 1);

  it('has a receptive field the default left context covers, and no state', () => {
    expect(runner.stateful).toBe(false);
    expect(runner.receptiveFieldFrames).toBe(smallCode2Wav.numLayers * (smallCode2Wav.kernelSize - 1));
    expect(runner.receptiveFieldFrames).toBeLessThanOrEqual(25);
  });

  it('streamed chunks (4, then 25, with 25 frames of left context) concatenate to the offline decode', () => {
    const [offline] = runner.decode([{ seqId: 'off', codes, numFrames, contextFrames: 0 }]);
    expect(offline.length).toBe(numFrames * smallCode2Wav.samplesPerFrame);
    const streamed = concatFloat32(
      chunkItems(codes, numFrames, 4, 25, 25, 's').map((item) => runner.decode([item])[0]),
    );
    expect(streamed.length).toBe(offline.length);
    expect(maxAbsDiff(streamed, offline)).toBeLessThan(1e-5);
    // Audio, not silence, in [-1, 1].
    const peak = offline.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    expect(peak).toBeGreaterThan(0.1);
    expect(peak).toBeLessThanOrEqual(1);
  });

  it('too little left context does change the audio (the check above is not vacuous)', () => {
    const [offline] = runner.decode([{ seqId: 'off', codes, numFrames, contextFrames: 0 }]);
    const starved = concatFloat32(chunkItems(codes, numFrames, 4, 25, 2, 's').map((item) => runner.decode([item])[0]));
    expect(starved.length).toBe(offline.length);
    expect(maxAbsDiff(starved, offline)).toBeGreaterThan(1e-3);
  });

  it('one batched decode of chunks with different lengths equals decoding each alone', () => {
    const items = [
      ...chunkItems(codes, numFrames, 4, 25, 25, 'a').slice(0, 3),
      ...chunkItems(randomCodes(37, 2), 37, 7, 25, 25, 'b'),
      { seqId: 'empty', codes: new Int32Array(0), numFrames: 0, contextFrames: 0 },
    ];
    const batched = runner.decode(items);
    const alone = items.map((item) => runner.decode([item])[0]);
    expect(batched.map((a) => a.length)).toEqual(alone.map((a) => a.length));
    batched.forEach((audio, i) => expect(maxAbsDiff(audio, alone[i])).toBeLessThan(1e-5));
  });

  it('refuses codes outside the codebook with a clear error', () => {
    const bad = randomCodes(3, 3);
    bad[5] = smallCode2Wav.codebookSize;
    expect(() => runner.decode([{ seqId: 'bad', codes: bad, numFrames: 3, contextFrames: 0 }])).toThrow(
      /outside the codebook/,
    );
  });
});

describe('stateful code2wav', () => {
  const numFrames = 4 + 25 * 3 + 11;
  const codes = randomCodes(numFrames, 1);

  it("a warm-up decodes no request: framesDecoded and the streams' state unchanged", () => {
    const before = stateful.framesDecoded;
    const [a] = stateful.decode([{ seqId: 'warm-a', codes: randomCodes(4, 7), numFrames: 4, contextFrames: 0 }]);
    stateful.warm();
    expect(stateful.framesDecoded - before).toBe(4);
    expect(stateful.numStates).toBe(1); // the warm-up's state is gone, the stream's kept
    stateful.free('warm-a');
    expect(a.length).toBeGreaterThan(0);
  });

  it('is the streaming graph, and its offline decode is the stateless graph`s, sample for sample', () => {
    expect(stateful.stateful).toBe(true);
    expect(stateful.receptiveFieldFrames).toBe(runner.receptiveFieldFrames);
    const [offline] = runner.decode([{ seqId: 'off', codes, numFrames, contextFrames: 0 }]);
    const [whole] = stateful.decode([{ seqId: 'whole', codes, numFrames, contextFrames: 0 }]);
    stateful.free('whole');
    expect(whole).toEqual(offline);
  });

  it('decodes each frame once and matches the offline decode within one pcm16 step over many chunk splits', () => {
    const [offline] = runner.decode([{ seqId: 'off', codes, numFrames, contextFrames: 0 }]);
    const ones = Array.from({ length: numFrames + 1 }, (_, t) => t);
    const talkerPlan = chunkPlan(numFrames, 4, 25);
    const plans: [string, readonly number[], number][] = [
      ['1-frame chunks', ones, 0],
      ['the Talker`s plan, 25 frames of left context', talkerPlan, 25],
      ['the Talker`s plan, no left context', talkerPlan, 0],
      ...[1, 2, 3, 4, 5].map((seed): [string, number[], number] => [
        `random split ${seed}`,
        randomSplit(numFrames, 30, seed),
        seed % 2 ? 25 : 3,
      ]),
    ];
    for (const [name, bounds, leftContext] of plans) {
      const before = stateful.framesDecoded;
      const streamed = concatFloat32(
        splitItems(codes, numFrames, bounds, leftContext, name).map((item) => stateful.decode([item])[0]),
      );
      stateful.free(name);
      expect(stateful.framesDecoded - before, name).toBe(numFrames); // left context skipped: the state holds it
      expect(streamed.length, name).toBe(offline.length);
      // Not always bit-identical: a conv over 1 frame and over 90 runs other kernels, summing in another order.
      expect(maxAbsDiff(streamed, offline), name).toBeLessThan(1e-5);
      expect(maxPcm16Diff(streamed, offline), name).toBeLessThanOrEqual(1);
    }
    expect(stateful.numStates).toBe(0);
  });

  it('batches requests at different points of their streams, each row with its own state', () => {
    const lengths = [numFrames, 37, 61, 5];
    const requests = lengths.map((n, r) => {
      const c = randomCodes(n, 10 + r);
      const [offline] = runner.decode([{ seqId: `off${r}`, codes: c, numFrames: n, contextFrames: 0 }]);
      return {
        offline,
        items: splitItems(c, n, randomSplit(n, 1 + 9 * r, 20 + r), 25, `req${r}`),
        out: [] as Float32Array[],
      };
    });
    // Request r joins at step r (a new row without state next to rows with state), then sends a chunk every step.
    for (let step = 0; requests.some((r) => r.out.length < r.items.length); step++) {
      const batch = requests.filter((r, i) => i <= step && r.out.length < r.items.length);
      const audio = stateful.decode(batch.map((r) => r.items[r.out.length]));
      batch.forEach((r, i) => r.out.push(audio[i]));
    }
    expect(stateful.numStates).toBe(lengths.length);
    requests.forEach((r, i) => {
      const streamed = concatFloat32(r.out);
      expect(maxAbsDiff(streamed, r.offline), `request ${i}`).toBeLessThan(1e-5);
      expect(maxPcm16Diff(streamed, r.offline), `request ${i}`).toBeLessThanOrEqual(1);
      stateful.free(r.items[0].seqId);
    });
    expect(stateful.numStates).toBe(0);
  });

  it('frees a request`s state; the id then starts again from silence', () => {
    const [offline] = runner.decode([
      { seqId: 'off', codes: sliceFrames(codes, numFrames, 0, 10), numFrames: 10, contextFrames: 0 },
    ]);
    const first = { seqId: 'x', codes: sliceFrames(codes, numFrames, 0, 10), numFrames: 10, contextFrames: 0 };
    stateful.decode([first]);
    expect(stateful.numStates).toBe(1);
    const [continued] = stateful.decode([first]); // the same frames again, after the first ten: other audio
    expect(maxAbsDiff(continued, offline)).toBeGreaterThan(1e-3);
    stateful.free('x');
    stateful.free('x'); // idempotent
    expect(stateful.numStates).toBe(0);
    const [again] = stateful.decode([first]);
    expect(maxPcm16Diff(again, offline)).toBeLessThanOrEqual(1);
    stateful.free('x');
  });

  it('refuses two chunks of one request in one decode (the second needs the first`s state)', () => {
    const item = { seqId: 'twice', codes: sliceFrames(codes, numFrames, 0, 2), numFrames: 2, contextFrames: 0 };
    expect(() => stateful.decode([item, item])).toThrow(/two chunks of one request/);
    expect(stateful.numStates).toBe(0);
  });
});
