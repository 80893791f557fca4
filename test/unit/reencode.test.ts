/**
 * The policy of an item encoded again (src/engine/requests/reencode.ts): a clip whose encode failed for memory or
 * time steps one step down its fallback, the other parts untouched; a lost store entry runs again as it was; past the
 * floor, with the fallback off, for an item that is no clip, or after MAX_REENCODES runs, the item fails saying why.
 */
import { describe, expect, it } from 'vitest';
import { decodedClip } from '../helpers/media.ts';
import type { ChatMessage, ContentPart } from '../../src/common/engine.ts';
import { ErrorCodes, REENCODE_CODES, type SerializedError } from '../../src/common/errors.ts';
import {
  MAX_REENCODES,
  reencodeDecision,
  reencodeReason,
  reencodeWarning,
  type ReencodeAsk,
} from '../../src/engine/requests/reencode.ts';

const policy = { framesFactor: 0.5, minFrames: 4, pixelsFactor: 0.5, minFramePixels: 112 * 112 };
type VideoPart = Extract<ContentPart, { type: 'video' }>;

const clip = (numFrames: number, width: number, height: number): VideoPart =>
  decodedClip(numFrames, 'k', 1, { width, height });

const memory: SerializedError = { code: ErrorCodes.ENCODE_MEMORY, message: 'messages[0].content[1] (video): too big' };
const what = 'messages[0].content[1] (video)';

function askFor(part: VideoPart, error = memory, over: Partial<ReencodeAsk> = {}): ReencodeAsk {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'What happens?' }, part] },
  ];
  return {
    messages,
    item: { part, what, modality: 'video' },
    error,
    fallback: policy,
    cell: 28,
    reencodes: 0,
    ...over,
  };
}

const clipOf = (messages: readonly ChatMessage[]) => (messages[1].content as ContentPart[])[1] as VideoPart;

describe('an item encoded again', () => {
  it('steps a clip whose encode failed for memory or time one step down; the rest of the prompt stays', () => {
    for (const code of [ErrorCodes.ENCODE_MEMORY, ErrorCodes.CHUNK_TIMEOUT]) {
      const ask = askFor(clip(30, 252, 168), { code, message: 'failed' });
      const d = reencodeDecision(ask);
      if (d.kind !== 'again') throw new Error(`expected a new run, got ${JSON.stringify(d)}`);
      expect(clipOf(d.messages)).toMatchObject({ numFrames: 15, width: 252, height: 168, fps: 1 });
      expect(clipOf(d.messages).sourceKey).not.toBe('k'); // the step is named: never taken for the full clip
      expect(d.messages[0]).toBe(ask.messages[0]);
      expect((d.messages[1].content as ContentPart[])[0]).toBe((ask.messages[1].content as ContentPart[])[0]);
      expect(d.stepped).toEqual({
        from: { numFrames: 30, width: 252, height: 168 },
        to: { numFrames: 15, width: 252, height: 168 },
      });
    }
    // At min_frames, the frames shrink instead.
    const d = reencodeDecision(askFor(clip(4, 252, 168)));
    expect(d.kind === 'again' && clipOf(d.messages)).toMatchObject({ numFrames: 4, width: 168, height: 112 });
  });

  it('runs again as it was when the store lost the rows (they are encoded from the bytes)', () => {
    const ask = askFor(clip(8, 252, 168), { code: ErrorCodes.EC_ENTRY_LOST, message: 'lost' });
    expect(reencodeDecision(ask)).toEqual({ kind: 'again', messages: ask.messages, stepped: null });
    // An image's entry too.
    const image = { ...ask, item: { part: {}, what: 'messages[0].content[1] (image)', modality: 'image' } };
    expect(reencodeDecision(image).kind).toBe('again');
  });

  it('runs again as it was when a skipped encode was not covered by the Thinker`s KV', () => {
    const image = {
      ...askFor(clip(8, 252, 168), { code: ErrorCodes.KV_NOT_HELD, message: 'not held' }),
      item: { part: {}, what: 'messages[0].content[1] (image)', modality: 'image' },
    };
    expect(reencodeDecision(image)).toEqual({ kind: 'again', messages: image.messages, stepped: null });
    expect(reencodeReason(ErrorCodes.KV_NOT_HELD)).toBe('kv');
  });

  it('fails the item saying why: the floor, the fallback off, not a clip, too many runs', () => {
    const why = (ask: ReencodeAsk) => {
      const d = reencodeDecision(ask);
      if (d.kind !== 'fail') throw new Error('expected a failure');
      expect(d.error.code).toBe(ask.error.code);
      expect(d.error.message.startsWith(`${ask.error.message} (not encoded again: `)).toBe(true);
      return d.error.message;
    };
    expect(why(askFor(clip(4, 112, 84)))).toContain("is at the fallback's floor (encoder.video.fallback)");
    expect(why(askFor(clip(30, 252, 168), memory, { fallback: null }))).toContain('encoder.video.fallback is off');
    const audio = { ...askFor(clip(30, 252, 168)), item: { part: {}, what: 'track', modality: 'audio' } };
    expect(why(audio)).toContain('only a clip can be encoded again');
    const lost = { code: ErrorCodes.EC_ENTRY_LOST, message: 'lost' } as const;
    expect(why(askFor(clip(30, 252, 168), lost, { reencodes: MAX_REENCODES - 1 }))).toContain(
      `ran ${MAX_REENCODES} times already`,
    );
  });

  it('asks main only for the failures it can mend', () => {
    expect([...REENCODE_CODES].sort()).toEqual(
      [ErrorCodes.CHUNK_TIMEOUT, ErrorCodes.EC_ENTRY_LOST, ErrorCodes.ENCODE_MEMORY, ErrorCodes.KV_NOT_HELD].sort(),
    );
  });

  it('says in the warning what was served instead of what, and why', () => {
    const first = { numFrames: 30, width: 252, height: 168 };
    expect(reencodeWarning(what, first, { numFrames: 7, width: 252, height: 168 }, memory)).toBe(
      `${what} was served with 7 frames of 252x168 instead of 30 frames of 252x168: its encode failed out of memory ` +
        '(CHORUS_ERR_ENCODE_MEMORY) and it was encoded again with fewer or smaller frames (encoder.video.fallback)',
    );
    const late = { code: ErrorCodes.CHUNK_TIMEOUT, message: 'late' } as const;
    expect(reencodeWarning(what, first, first, late)).toContain("its encode failed past the encoder's timeout_ms");
  });
});
