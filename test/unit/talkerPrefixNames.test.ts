/**
 * The Talker's block names (stages/talker/TalkerPrefixCache.ts): after the Thinker's names when its first chunk
 * brings them (one hash a block instead of hashing every row of the history), by hashing the rows otherwise; a
 * Talker of another model, or a request of another cache salt, never shares a name.
 */
import { describe, expect, it } from 'vitest';
import { TalkerPrefixCache } from '../../stages/talker/TalkerPrefixCache.ts';

const DIM = 4;
const runner = {
  conditionDim: DIM,
  kvBytesPerToken: 64,
  free: () => undefined,
  moveSequence: () => undefined,
  copySequence: () => undefined,
  kvBytes: () => 0,
};
const cacheOf = (modelKey: string) =>
  new TalkerPrefixCache({ maxBytes: 1 << 20, blockPositions: 2 }, modelKey, runner as never);
const rows = (n: number, base: number) => Float32Array.from({ length: n * DIM }, (_, i) => base + i);

describe('TalkerPrefixCache names', () => {
  it('follow the Thinker names: equal names, equal blocks, whatever the rows; a prefix shares its blocks', () => {
    const talker = cacheOf('talker-a');
    const a = talker.namesOf(rows(5, 0), 5, { names: ['n1', 'n2'], positions: 2 });
    const b = talker.namesOf(rows(7, 100), 7, { names: ['n1', 'n2', 'n3'], positions: 2 });
    expect(a).toHaveLength(2);
    expect(b.slice(0, 2)).toEqual(a);
    expect(new Set(b).size).toBe(3);
    expect(cacheOf('talker-b').namesOf(rows(5, 0), 5, { names: ['n1', 'n2'], positions: 2 })).not.toEqual(a);
  });

  it('hash the rows when the Thinker sent none, or names of other blocks than its own', () => {
    const talker = cacheOf('talker-a');
    const byRows = talker.namesOf(rows(5, 0), 5);
    expect(byRows).toHaveLength(2);
    expect(talker.namesOf(rows(5, 0), 5, { names: ['n1'], positions: 4 })).toEqual(byRows);
    expect(talker.namesOf(rows(5, 0), 5, { names: ['n1'], positions: 2 })).toEqual(byRows); // too few
    expect(talker.namesOf(rows(5, 1), 5)).not.toEqual(byRows);
  });

  it('hashed from rows, a cache salt renames every block; one salt names alike', () => {
    const talker = cacheOf('talker-a');
    const plain = talker.namesOf(rows(5, 0), 5);
    const a = talker.namesOf(rows(5, 0), 5, undefined, 'salt-a');
    expect(talker.namesOf(rows(5, 0), 5, undefined, 'salt-a')).toEqual(a);
    const b = talker.namesOf(rows(5, 0), 5, undefined, 'salt-b');
    for (let k = 0; k < 2; k++) expect(new Set([plain[k], a[k], b[k]]).size).toBe(3);
  });
});
