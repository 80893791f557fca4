/**
 * Images name their prefix-cache blocks by their bytes key, as clips do (ModalityDef.keyedBlocks): a camera frame
 * prefilled already is found in the Thinker's cache from its key at admission, without waiting for the encoder's
 * round trip; main names the same blocks for KV-aware routing. Audio stays named by its rows (a clip that grew since
 * the last prefill still matches on the windows it shares).
 */
import { describe, expect, it } from 'vitest';
import { blockKeyOf } from '../../src/engine/blockKey.ts';
import type { MediaItem } from '../../src/engine/mediaPrompt.ts';
import { tokenBlockNames } from '../../src/sched/blockNames.ts';
import { configWith } from '../helpers/engine.ts';

const graph = configWith('tiny-omni.yaml');
const stage = (id: string) => graph.stages.find((s) => s.stageId === id)!;

function image(bytes: number[], cacheSalt?: string): MediaItem {
  return {
    index: 0,
    modality: 'image',
    part: { type: 'image', data: Uint8Array.from(bytes) },
    what: 'messages[0].content[0] (image)',
    numEmbeddings: 4,
    encoder: stage('image-encoder'),
    ...(cacheSalt === undefined ? {} : { cacheSalt }),
  };
}

describe('an image block key', () => {
  it('is its bytes, its encoder and its partition: equal bytes, equal key; any other, another', () => {
    const key = blockKeyOf(image([1, 2, 3]));
    expect(key).toMatch(/^[\w-]{22}$/);
    expect(blockKeyOf(image([1, 2, 3]))).toBe(key);
    expect(blockKeyOf(image([1, 2, 4]))).not.toBe(key);
    expect(blockKeyOf(image([1, 2, 3], 'tenant-b'))).not.toBe(key);
    // Another vision model (its weights' seed) makes other rows of the same bytes: another key.
    const reseeded = configWith('tiny-omni.yaml', { 'model_seed: 0': 'model_seed: 1' });
    const otherModel = reseeded.stages.find((s) => s.stageId === 'image-encoder')!;
    expect(blockKeyOf({ ...image([1, 2, 3]), encoder: otherModel })).not.toBe(key);
  });

  it('names the frame positions of a prompt, so main and the Thinker name its blocks before its rows exist', () => {
    const ids = [1, 2, 9, 9, 9, 9, 3, 4];
    const named = (bytes: number[]) =>
      tokenBlockNames('root', 2, ids, ids.length, [{ start: 2, length: 4, blockKey: blockKeyOf(image(bytes))! }]);
    expect(named([1, 2, 3])).toHaveLength(4);
    expect(named([1, 2, 3])).toEqual(named([1, 2, 3]));
    // Behind the same placeholder tokens another picture shares only the block before it.
    const other = named([7, 7, 7]);
    expect(other[0]).toBe(named([1, 2, 3])[0]);
    expect(other.slice(1).some((n, k) => n === named([1, 2, 3])[k + 1])).toBe(false);
  });

  it('is none for audio, named by its rows', () => {
    const audio: MediaItem = {
      index: 0,
      modality: 'audio',
      part: { type: 'audio', data: new Uint8Array(320), format: 'pcm16' },
      what: 'messages[0].content[0] (audio)',
      numEmbeddings: 1,
      encoder: stage('audio-encoder'),
    };
    expect(blockKeyOf(audio)).toBeUndefined();
  });
});
