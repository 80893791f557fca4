/**
 * The fallback of a clip that does not fit (encoder.video.fallback): its steps (half the frames down to min_frames,
 * then half the area down to min_frame_pixels, sides on the 28 px grid) and floor; a reduced clip's frames, rate and
 * key; and fitPrompt, which steps every clip down until the prompt fits, says so, and refuses at the floor.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage, ContentPart } from '../../src/common/engine.ts';
import { ChorusError, ErrorCodes } from '../../src/common/errors.ts';
import { fitPrompt } from '../../src/engine/fitPrompt.ts';
import { MediaItemTooLarge, type PreparedPrompt } from '../../src/engine/mediaPrompt.ts';
import { nextStep, reducedVideo } from '../../src/media/video/videoFallback.ts';

const policy = { framesFactor: 0.5, minFrames: 4, pixelsFactor: 0.5, minFramePixels: 112 * 112 };
type VideoPart = Extract<ContentPart, { type: 'video' }>;

function clip(numFrames: number, width: number, height: number): VideoPart {
  const data = new Uint8Array(numFrames * width * height * 3);
  for (let f = 0; f < numFrames; f++) data.fill(f * 10, f * width * height * 3, (f + 1) * width * height * 3);
  return { type: 'video', data, numFrames, width, height, fps: 2, sourceKey: 'k' };
}

describe('the fallback steps', () => {
  it('halves the frames to min_frames, then the area to min_frame_pixels on the grid, then stops', () => {
    const seen: string[] = [];
    let at: { numFrames: number; width: number; height: number } | null = { numFrames: 32, width: 252, height: 168 };
    while (at) {
      seen.push(`${at.numFrames} ${at.width}x${at.height}`);
      at = nextStep(at, policy, 28);
    }
    expect(seen).toEqual([
      '32 252x168',
      '16 252x168',
      '8 252x168',
      '4 252x168',
      '4 168x112', // half the area, sides floored to 28 px
      '4 112x84', // 9408 px: under the floor's 12544, so the last step
    ]);
  });

  it('picks frames uniformly and resizes them; the rate and key follow', () => {
    const full = clip(8, 56, 56);
    const fewer = reducedVideo(full, { numFrames: 4, width: 56, height: 56 });
    expect(fewer.numFrames).toBe(4);
    expect([0, 1, 2, 3].map((k) => fewer.data[k * 56 * 56 * 3])).toEqual([0, 20, 50, 70]); // frames 0, 2, 5, 7
    expect(fewer.fps).toBe(1); // 4 frames standing for the 4 s that 8 at 2 fps covered
    expect(fewer.sourceKey).not.toBe(full.sourceKey);
    const smaller = reducedVideo(full, { numFrames: 8, width: 28, height: 28 });
    expect(smaller.data.byteLength).toBe(8 * 28 * 28 * 3);
    expect(smaller.data[7 * 28 * 28 * 3 + 5]).toBe(70); // a flat frame stays flat
  });
});

describe('fitPrompt', () => {
  const messages: ChatMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'hi' }, clip(16, 56, 56)] }];
  const framesIn = (ms: readonly ChatMessage[]) => ((ms[0].content as ContentPart[])[1] as VideoPart).numFrames;
  const fake = (ms: readonly ChatMessage[]) => ({ frames: framesIn(ms) }) as unknown as PreparedPrompt;
  const frames = (p: PreparedPrompt) => (p as unknown as { frames: number }).frames;
  const fit = { fallback: policy, cell: 28, encode: null };

  it('steps the clips down until the rows fit, and names the clip, its frames and the limit', () => {
    const out = fitPrompt(messages, fake, (p) => (frames(p) > 5 ? 'the rows budget' : null), fit);
    expect(frames(out.prompt)).toBe(4);
    expect(out.warnings).toEqual([
      'messages[0].content[1] (video) was served with 4 frames of 56x56 instead of 16 frames of 56x56 to fit the ' +
        'rows budget (encoder.video.fallback)',
    ]);
    expect(fitPrompt(messages, fake, () => null, fit).warnings).toEqual([]);
  });

  it('steps down on a refusal for size, and at the floor refuses saying so; other errors pass', () => {
    const tooBig = (ms: readonly ChatMessage[]) => {
      if (framesIn(ms) > 8) throw new MediaItemTooLarge('messages[0].content[1] (video): over the ring');
      return fake(ms);
    };
    expect(frames(fitPrompt(messages, tooBig, () => null, fit).prompt)).toBe(8);
    const never = () => {
      throw new ChorusError(ErrorCodes.CONTEXT_LENGTH_EXCEEDED, 'the prompt takes 9999 positions');
    };
    expect(() => fitPrompt(messages, never, () => null, fit)).toThrow(/9999 positions \(even with its clips at the/);
    expect(() => fitPrompt(messages, never, () => null, { fallback: null, cell: 28, encode: null })).toThrow(
      /^the prompt takes/,
    );
    const bad = () => {
      throw new ChorusError(ErrorCodes.MEDIA_INVALID, 'corrupt');
    };
    expect(() => fitPrompt(messages, bad, () => null, fit)).toThrow('corrupt');
    // Over the rows budget at the floor: returned as it is, for the admission's own check to refuse.
    expect(frames(fitPrompt(messages, fake, () => 'the rows budget', fit).prompt)).toBe(4);
  });
});
