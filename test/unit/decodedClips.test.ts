/**
 * The clips main keeps decoded (src/media/video/DecodedClips.ts): an LRU bounded by the frames' and tracks' bytes;
 * a hit refreshes its entry, a part over the whole budget is never kept, a smaller budget (a reload) drops the
 * least recently used at once, and every lookup is told to the metrics hook.
 */
import { describe, expect, it } from 'vitest';
import { DecodedClips } from '../../src/media/video/DecodedClips.ts';
import type { PartOf } from '../../src/media/modalities/ModalityDef.ts';

const clip = (frameBytes: number, trackBytes = 0): PartOf<'video'> => ({
  type: 'video',
  data: new Uint8Array(frameBytes),
  numFrames: 1,
  width: 1,
  height: 1,
  fps: 2,
  sourceKey: 'k',
  ...(trackBytes > 0 ? { audio: new Uint8Array(trackBytes) } : {}),
});

describe('DecodedClips', () => {
  it('keeps clips within its budget, dropping the least recently used; a hit refreshes', () => {
    const looked: boolean[] = [];
    const clips = new DecodedClips(300, (found) => looked.push(found));
    const [a, b, c] = [clip(100), clip(80, 20), clip(100)];
    clips.set('a', a);
    clips.set('b', b);
    expect(clips.get('a')).toBe(a); // now b is the least recently used
    clips.set('c', c);
    expect(clips.stats).toMatchObject({ entries: 3, heldBytes: 300 });
    clips.set('d', clip(50)); // over: b goes
    expect(clips.get('b')).toBeUndefined();
    expect([clips.get('a'), clips.get('c')]).toEqual([a, c]);
    expect(clips.stats).toEqual({ entries: 3, heldBytes: 250, hits: 3, misses: 1 });
    expect(looked).toEqual([true, false, true, true]);
  });

  it('never keeps a clip larger than the budget, and replaces a key in place', () => {
    const clips = new DecodedClips(100);
    clips.set('big', clip(101));
    expect(clips.stats.entries).toBe(0);
    clips.set('k', clip(60));
    clips.set('k', clip(40));
    expect(clips.stats).toMatchObject({ entries: 1, heldBytes: 40 });
  });

  it('a smaller budget drops entries now; a budget of 0 keeps nothing', () => {
    const clips = new DecodedClips(300);
    clips.set('a', clip(100));
    clips.set('b', clip(100));
    clips.resize(150);
    expect(clips.get('a')).toBeUndefined();
    expect(clips.stats).toMatchObject({ entries: 1, heldBytes: 100 });
    clips.resize(0);
    clips.set('c', clip(1));
    expect(clips.stats).toMatchObject({ entries: 0, heldBytes: 0 });
  });
});
