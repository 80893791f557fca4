/**
 * The audio encoder's window reuse (stages/encoder/AudioWindows.ts): a window of mel frames encoded before is taken
 * from the cache, within its request's cache salt only: the same speech under another salt runs the encoder again.
 */
import { describe, expect, it } from 'vitest';
import { AudioWindows } from '../../stages/encoder/AudioWindows.ts';
import { AUDIO_FRAMES_PER_EMBEDDING } from '../../src/media/audio.ts';
import type { AudioFeatures } from '../../src/media/types.ts';

const BINS = 2;
const WINDOW = 2 * AUDIO_FRAMES_PER_EMBEDDING;
const WIDTH = 3;

/** Two windows of frames; `cacheSalt` as the encoder core sets it. */
function clip(cacheSalt?: string): AudioFeatures {
  const numFrames = 2 * WINDOW;
  const mel = Float32Array.from({ length: BINS * numFrames }, (_, i) => Math.sin(i));
  const numEmbeddings = numFrames / AUDIO_FRAMES_PER_EMBEDDING;
  return { modality: 'audio', mel, numMelBins: BINS, numFrames, numEmbeddings, ...(cacheSalt ? { cacheSalt } : {}) };
}

describe('AudioWindows', () => {
  it('reuses a window within a salt only', () => {
    const windows = new AudioWindows(WINDOW, 'encoder-id');
    let runs = 0;
    const run = (ws: readonly AudioFeatures[]) => {
      runs += ws.length;
      return ws.map((w) => new Float32Array(w.numEmbeddings * WIDTH).fill(runs));
    };
    const first = windows.encode([clip('a')], WIDTH, run)[0];
    expect(runs).toBe(2);
    expect(windows.encode([clip('a')], WIDTH, run)[0]).toEqual(first); // both windows from the cache
    expect(runs).toBe(2);
    windows.encode([clip('b')], WIDTH, run);
    expect(runs).toBe(4);
    windows.encode([clip()], WIDTH, run);
    expect(runs).toBe(6);
    expect(windows.stats).toEqual({ windowHits: 2, windowsEncoded: 6 });
  });
});
