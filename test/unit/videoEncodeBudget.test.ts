/**
 * The vision encoder's working memory per encode (encoder.video.max_patches_per_encode): a clip's patches, the
 * estimate fitted to measured peaks (src/media/video/encodeMemory.ts), and fitPrompt stepping a clip over the patches
 * under them (or refusing it when it cannot).
 */
import { describe, expect, it } from 'vitest';
import { decodedClip } from '../helpers/media.ts';
import type { ChatMessage, ContentPart } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { fitPrompt } from '../../src/engine/fitPrompt.ts';
import type { PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { clipPatches, encodeWorkingBytes } from '../../src/media/video/encodeMemory.ts';
import { DEFAULT_VIDEO_GRID } from '../../src/media/video/videoGrid.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import { overMemoryCap } from '../../stages/encoder/encodeCap.ts';

type VideoPart = Extract<ContentPart, { type: 'video' }>;
const MiB = 1024 * 1024;
const tinyVision = { numHeads: 4, hiddenSize: 128, intermediateSize: 512 }; // tiny-omni's, as measured

const clip = (numFrames: number, width: number, height: number): VideoPart =>
  decodedClip(numFrames, 'k', 1, { width, height });

describe('a clip encode', () => {
  it('counts temporal groups x patches per frame (an odd last frame makes a group)', () => {
    expect(clipPatches({ numFrames: 30, width: 252, height: 168 }, DEFAULT_VIDEO_GRID)).toBe(15 * 12 * 18);
    expect(clipPatches({ numFrames: 7, width: 56, height: 28 }, DEFAULT_VIDEO_GRID)).toBe(4 * 2 * 4);
  });

  it('estimates a clip as a batch of its groups, at most 10% over the measured peaks', () => {
    // [groups, patches a group, peak MiB] (encodeMemory.ts): 15 x 216 is a 30-frame 252 x 168 clip.
    const measured: [number, number, number][] = [
      [4, 216, 18.1],
      [8, 216, 36.1],
      [15, 216, 68.8],
      [30, 216, 136.9],
      [15, 108, 24.6],
      [10, 432, 148.4],
    ];
    for (const [groups, patches, mib] of measured) {
      const estimate = encodeWorkingBytes(groups, patches, tinyVision) / MiB;
      expect(estimate).toBeGreaterThanOrEqual(mib);
      expect(estimate).toBeLessThan(mib * 1.1);
    }
    // The clip whole (544 MiB measured) would be priced ~9x its groups.
    expect(encodeWorkingBytes(1, 3240, tinyVision) / encodeWorkingBytes(15, 216, tinyVision)).toBeGreaterThan(8);
    const ratio = encodeWorkingBytes(1, 4000, tinyVision) / encodeWorkingBytes(1, 2000, tinyVision);
    expect(ratio).toBeGreaterThan(3.8);
  });
});

describe('fitPrompt under max_patches_per_encode', () => {
  const policy = { framesFactor: 0.5, minFrames: 4, pixelsFactor: 0.5, minFramePixels: 112 * 112 };
  const messages: ChatMessage[] = [{ role: 'user', content: [clip(32, 252, 168), { type: 'text', text: 'hi' }] }];
  const served = (ms: readonly ChatMessage[]) => ms[0].content[0] as VideoPart;
  const build = (ms: readonly ChatMessage[]) => ({ clip: served(ms) }) as unknown as PreparedPrompt;
  const clipOf = (p: PreparedPrompt) => (p as unknown as { clip: VideoPart }).clip;
  const encode = (maxPatches: number) => ({ maxPatches, grid: DEFAULT_VIDEO_GRID });

  it('names every limit that asked for a step', () => {
    // 32 frames are over 2,000 patches (3,456); 16 fit them (1,728) but not the rows budget; 8 fit both.
    const rows = (p: PreparedPrompt) => (clipOf(p).numFrames > 8 ? 'the rows budget' : null);
    const out = fitPrompt(messages, build, rows, { fallback: policy, cell: 28, encode: encode(2000) });
    expect(clipOf(out.prompt).numFrames).toBe(8);
    expect(out.warnings[0]).toMatch(/to fit the encoder's patches per encode \(.*: 2000\) and the rows budget \(enc/);
  });

  it('steps a clip over the patches down until its encode fits, and says so', () => {
    // 32 frames of 252 x 168: 16 x 216 = 3,456 patches; 8 frames are 864.
    const out = fitPrompt(messages, build, () => null, { fallback: policy, cell: 28, encode: encode(1000) });
    expect(clipPatches(clipOf(out.prompt), DEFAULT_VIDEO_GRID)).toBe(864);
    expect(out.warnings).toEqual([
      'messages[0].content[0] (video) was served with 8 frames of 252x168 instead of 32 frames of 252x168 to fit ' +
        "the encoder's patches per encode (encoder.video.max_patches_per_encode: 1000) (encoder.video.fallback)",
    ]);
    const roomy = fitPrompt(messages, build, () => null, { fallback: policy, cell: 28, encode: encode(3456) });
    expect(roomy.warnings).toEqual([]);
  });

  it('refuses a clip over the patches at the floor, or with the fallback off', () => {
    const refusal = (fit: Parameters<typeof fitPrompt>[3]) => {
      try {
        fitPrompt(messages, build, () => null, fit);
      } catch (err) {
        return err as ChorusError;
      }
      throw new Error('not refused');
    };
    const atFloor = refusal({ fallback: policy, cell: 28, encode: encode(10) });
    expect(atFloor.code).toBe(ErrorCodes.MEDIA_INVALID);
    // The floor: 4 frames of 112 x 84, 2 groups x 6 x 8 patches.
    expect(atFloor.message).toMatch(
      /max_patches_per_encode: 10\): .* is 96 patches even with its clips at the fallback's floor/,
    );
    const off = refusal({ fallback: null, cell: 28, encode: encode(1000) });
    expect(off.message).toMatch(/is 3456 patches \(encoder.video.fallback is off\)/);
  });
});

describe('the memory cap over a run (encodeCap.ts), as the runner cuts it', () => {
  const cap = {
    maxRunPatches: Infinity,
    runBytes: (sequences: number, patches: number) => encodeWorkingBytes(sequences, patches, tinyVision),
    maxBytes: 100 * MiB,
    patchesPerRow: 4,
  };
  const input = (modality: 'video' | 'image', gridT: number, numPatches: number) =>
    ({ modality, gridT, numPatches }) as unknown as EncoderInput;

  it('prices a clip by its temporal groups, an image as one sequence, a batch padded to its longest', () => {
    expect(overMemoryCap(cap, [input('video', 15, 3240)])).toBeNull(); // ~74 MiB in 15 groups
    expect(overMemoryCap(cap, [input('image', 1, 3240)])?.code).toBe(ErrorCodes.ENCODE_MEMORY); // ~670 MiB whole
    // Two clips: 30 groups of 216 (~149 MiB), over 100 MiB together though each fits alone.
    expect(overMemoryCap(cap, [input('video', 15, 3240), input('video', 15, 3240)])?.code).toBe(
      ErrorCodes.ENCODE_MEMORY,
    );
  });
});
