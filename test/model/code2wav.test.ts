/**
 * Streaming Code2Wav must reproduce the offline decode: chunks with enough left context, concatenated,
 * give the same samples (no loss or duplication at boundaries), and batching chunks of different
 * lengths (right-padded) changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCode2WavRunner } from '../../stages/runners.ts';
import { Prng } from '../../stages/sampling/Prng.ts';
import type { Code2WavItem, Code2WavRunner } from '../../stages/types.ts';
import { code2wavSpec, maxAbsDiff, smallCode2Wav, tempModelsDir } from './helpers.ts';
import { concatFloat32 } from '../../src/common/arrays.ts';

const Q = smallCode2Wav.numCodebooks;
let models: ReturnType<typeof tempModelsDir>;
let runner: Code2WavRunner;

beforeAll(async () => {
  models = tempModelsDir();
  runner = await createCode2WavRunner({ model: code2wavSpec() }, models.dir);
});

afterAll(async () => {
  await runner?.close();
  models?.cleanup();
});

function randomCodes(numFrames: number, seed: number): Int32Array {
  const rng = new Prng(seed);
  return Int32Array.from({ length: Q * numFrames }, () => rng.nextUint32() % smallCode2Wav.codebookSize);
}

/** Frames [from, to) of a [Q][T] code array, as a [Q][to - from] array. */
function sliceFrames(codes: Int32Array, numFrames: number, from: number, to: number): Int32Array {
  const out = new Int32Array(Q * (to - from));
  for (let q = 0; q < Q; q++) out.set(codes.subarray(q * numFrames + from, q * numFrames + to), q * (to - from));
  return out;
}

/** The streaming plan: an initial chunk, then fixed chunks, each re-sending up to leftContext frames. */
function chunkItems(
  codes: Int32Array,
  numFrames: number,
  initial: number,
  chunk: number,
  leftContext: number,
  seqId: string,
): Code2WavItem[] {
  const items: Code2WavItem[] = [];
  for (let start = 0; start < numFrames; start += start === 0 ? initial : chunk) {
    const end = Math.min(numFrames, start + (start === 0 ? initial : chunk));
    const context = Math.min(leftContext, start);
    items.push({
      seqId,
      codes: sliceFrames(codes, numFrames, start - context, end),
      numFrames: end - start + context,
      contextFrames: context,
    });
  }
  return items;
}

describe('code2wav', () => {
  const numFrames = 4 + 25 * 3 + 11;
  const codes = randomCodes(numFrames, 1);

  it('has a receptive field the default left context covers', () => {
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
