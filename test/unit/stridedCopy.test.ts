/**
 * The addon's strided copies (native/src/strided.h), which move rows of position-major KV stores
 * (stages/models/AppendKvCache.ts): every block where it belongs, nothing outside them touched, and a block that would
 * run past either array refused before anything is written.
 */
import { describe, expect, it } from 'vitest';
import { addon } from '../../transport/shm/binding.ts';

const iota = (n: number) => Float32Array.from({ length: n }, (_, i) => i);

describe('copyStrided / fillStrided', () => {
  it('copies each block from its source stride to its destination stride', () => {
    const src = iota(20); // 5 positions x 4 floats
    const dst = new Float32Array(15).fill(-1); // 5 positions x 3 floats
    addon.copyStrided(dst, 1, 3, src, 2, 4, 2, 5); // floats 2-3 of each source position -> floats 1-2 of each target
    expect(Array.from(dst)).toEqual([-1, 2, 3, -1, 6, 7, -1, 10, 11, -1, 14, 15, -1, 18, 19]);
  });

  it('fills blocks, leaving the floats between them', () => {
    const dst = new Float32Array(8).fill(5);
    addon.fillStrided(dst, 0, 4, 2, 2, 0);
    expect(Array.from(dst)).toEqual([0, 0, 5, 5, 0, 0, 5, 5]);
    addon.fillStrided(dst, 2, 4, 1, 2, -2.5);
    expect(Array.from(dst)).toEqual([0, 0, -2.5, 5, 0, 0, -2.5, 5]);
  });

  it('works on views (from their own offset) and refuses blocks past either end without writing', () => {
    const backing = new Float32Array(10).fill(9);
    const view = backing.subarray(4, 8);
    addon.copyStrided(view, 0, 2, iota(4), 0, 1, 1, 2);
    expect(Array.from(backing)).toEqual([9, 9, 9, 9, 0, 9, 1, 9, 9, 9]);
    const dst = new Float32Array(6).fill(7);
    expect(() => addon.copyStrided(new Float32Array(9), 0, 3, iota(6), 0, 3, 3, 3)).toThrow(/past src/);
    expect(() => addon.copyStrided(dst, 1, 3, iota(9), 0, 3, 3, 2)).toThrow(/past dst/);
    expect(() => addon.fillStrided(dst, 4, 1, 3, 1, 0)).toThrow(/past dst/);
    expect(() => addon.copyStrided(dst, -1, 3, iota(6), 0, 3, 3, 1)).toThrow(/integer >= 0/);
    expect(() => addon.copyStrided(new Uint8Array(6) as never, 0, 3, iota(6), 0, 3, 3, 1)).toThrow(/Float32Array/);
    expect(Array.from(dst)).toEqual([7, 7, 7, 7, 7, 7]);
  });
});
