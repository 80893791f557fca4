/** Position map: placeholders expand to their items' rows; the splice equals a manual concatenation. */
import { describe, expect, it } from 'vitest';
import { buildPositionMap, readyLimit, spliceEmbeddings, spliceRange } from '../../src/media/positionMap.ts';
import type { Modality } from '../../src/media/types.ts';
import { ErrorCodes } from '../../src/common/errors.ts';

const D = 3;
const IMAGE = 262;
const AUDIO = 261;
const placeholders = new Map<number, Modality>([
  [IMAGE, 'image'],
  [AUDIO, 'audio'],
]);

/** A stand-in for the Thinker's embed(): row of token id t is [t, t + 0.5, -t]. */
function embed(ids: readonly number[]): Float32Array {
  const out = new Float32Array(ids.length * D);
  ids.forEach((t, i) => out.set([t, t + 0.5, -t], i * D));
  return out;
}

function mediaRows(n: number, base: number): Float32Array {
  return Float32Array.from({ length: n * D }, (_, i) => base + i / 1000);
}

// text(3) image(4 rows) text(2) audio(5 rows) text(1)
const prompt = [10, 11, 12, IMAGE, 20, 21, AUDIO, 30];
const items = [
  { modality: 'image' as const, numEmbeddings: 4 },
  { modality: 'audio' as const, numEmbeddings: 5 },
];
const image = mediaRows(4, 1000);
const audio = mediaRows(5, 2000);

describe('position map', () => {
  it('expands placeholders and records where each item goes', () => {
    const map = buildPositionMap(prompt, placeholders, items);
    expect(map.length).toBe(6 + 4 + 5);
    expect(map.tokenIds).toEqual([
      10,
      11,
      12,
      IMAGE,
      IMAGE,
      IMAGE,
      IMAGE,
      20,
      21,
      AUDIO,
      AUDIO,
      AUDIO,
      AUDIO,
      AUDIO,
      30,
    ]);
    expect(map.spans).toEqual([
      { item: 0, modality: 'image', placeholderIndex: 3, start: 3, length: 4 },
      { item: 1, modality: 'audio', placeholderIndex: 6, start: 9, length: 5 },
    ]);
  });

  it('text-image-text-audio-text: the merged sequence equals a manual splice', () => {
    const map = buildPositionMap(prompt, placeholders, items);
    const merged = spliceEmbeddings(map, embed(map.tokenIds), [image, audio], D);
    const manual = new Float32Array([...embed([10, 11, 12]), ...image, ...embed([20, 21]), ...audio, ...embed([30])]);
    expect(merged).toEqual(manual);
    // Chunked prefill: any split into ranges gives the same rows.
    const chunks: Float32Array[] = [];
    for (const [s, e] of [
      [0, 5],
      [5, 10],
      [10, 15],
    ] as const)
      chunks.push(spliceRange(map, s, e, embed(map.tokenIds.slice(s, e)), [image, audio], D));
    expect(new Float32Array(chunks.flatMap((c) => [...c]))).toEqual(manual);
  });

  it('readyLimit clamps prefill at the first item whose rows have not arrived', () => {
    const map = buildPositionMap(prompt, placeholders, items);
    expect(readyLimit(map, [false, false])).toBe(3); // the text before the image
    expect(readyLimit(map, [true, false])).toBe(9); // through the image and the text after it
    expect(readyLimit(map, [true, true])).toBe(15);
    expect(readyLimit(map, [false, true], 9)).toBe(15); // past the image already
    expect(readyLimit(map, [false, false], 5)).toBe(5); // inside the image: nothing more
    // An item in pieces: its first rows in, the limit is its first row missing.
    expect(readyLimit(map, [2, false])).toBe(5);
    expect(readyLimit(map, [0, false])).toBe(3);
    expect(readyLimit(map, [4, false])).toBe(9); // all of the image's rows: through the text after it
    // Scheduling a span whose rows are missing is a bug in the caller, said clearly.
    expect(() => spliceRange(map, 0, 5, embed(map.tokenIds.slice(0, 5)), [null, null], D)).toThrow(
      /not encoded yet.*readyLimit/,
    );
  });

  it('refuses a prompt whose placeholders do not match the items', () => {
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return (err as { code?: string }).code;
      }
    };
    expect(codeOf(() => buildPositionMap(prompt, placeholders, items.slice(0, 1)))).toBe(ErrorCodes.REQUEST_INVALID);
    expect(() => buildPositionMap(prompt, placeholders, [...items, items[0]])).toThrow(
      /2 media placeholders for 3 media items/,
    );
    expect(() => buildPositionMap(prompt, placeholders, [items[1], items[0]])).toThrow(
      /stands for image but media item 0 is audio/,
    );
    expect(() =>
      spliceEmbeddings(
        buildPositionMap(prompt, placeholders, items),
        embed(new Array(15).fill(1)),
        [image, mediaRows(3, 0)],
        D,
      ),
    ).toThrow(/expanded to 5/);
  });
});
