/** Codec frames for the Code2Wav tests: random codes, frame slices and chunk plans as the Talker sends them. */
import { expect } from 'vitest';
import { Prng } from '../../stages/sampling/Prng.ts';
import type { Code2WavItem } from '../../stages/types.ts';
import { floatToPcm16 } from '../../src/server/pcm.ts';

/** numCodebooks x numFrames random codes below codebookSize, layout [Q][T]. */
export function randomCodes(numCodebooks: number, codebookSize: number, numFrames: number, seed: number): Int32Array {
  const rng = new Prng(seed);
  return Int32Array.from({ length: numCodebooks * numFrames }, () => rng.nextUint32() % codebookSize);
}

/** Frames [from, to) of a [Q][T] code array, as a [Q][to - from] array. */
export function sliceFrames(codes: Int32Array, numFrames: number, from: number, to: number): Int32Array {
  const q = codes.length / numFrames;
  const out = new Int32Array(q * (to - from));
  for (let b = 0; b < q; b++) out.set(codes.subarray(b * numFrames + from, b * numFrames + to), b * (to - from));
  return out;
}

/** Chunk boundaries [0, ..., numFrames] with random chunk sizes of 1..maxChunk frames. */
export function randomSplit(numFrames: number, maxChunk: number, seed: number): number[] {
  const rng = new Prng(seed);
  const bounds = [0];
  while (bounds.at(-1)! < numFrames)
    bounds.push(Math.min(numFrames, bounds.at(-1)! + 1 + (rng.nextUint32() % maxChunk)));
  return bounds;
}

/** The Talker's plan: an initial chunk, then fixed chunks, as boundaries [0, ..., numFrames]. */
export function chunkPlan(numFrames: number, initial: number, chunk: number): number[] {
  const bounds = [0];
  while (bounds.at(-1)! < numFrames)
    bounds.push(Math.min(numFrames, bounds.at(-1)! + (bounds.length === 1 ? initial : chunk)));
  return bounds;
}

/** Chunks between the bounds, each re-sending up to leftContext frames before it (as the Talker does). */
export function splitItems(
  codes: Int32Array,
  numFrames: number,
  bounds: readonly number[],
  leftContext: number,
  seqId: string,
): Code2WavItem[] {
  return bounds.slice(1).map((end, i) => {
    const start = bounds[i];
    const context = Math.min(leftContext, start);
    return {
      seqId,
      codes: sliceFrames(codes, numFrames, start - context, end),
      numFrames: end - start + context,
      contextFrames: context,
    };
  });
}

/** Largest difference in pcm16 steps once both are quantized the way the server sends audio. */
export function maxPcm16Diff(a: Float32Array, b: Float32Array): number {
  const [x, y] = [floatToPcm16(a), floatToPcm16(b)];
  expect(x.length).toBe(y.length);
  let m = 0;
  for (let i = 0; i < x.length; i += 2) m = Math.max(m, Math.abs(x.readInt16LE(i) - y.readInt16LE(i)));
  return m;
}
