/**
 * groupByNumTokens: a step's items in runs that add the same number of positions; with past lengths, a long
 * sequence's decode runs apart from short ones' (a run pads every row's past to its longest), short contexts together.
 */
import { describe, expect, it } from 'vitest';
import { groupByNumTokens, PAST_SLACK, PAST_SPREAD } from '../../stages/models/groupByNumTokens.ts';

const decodes = (ids: string[]) => ids.map((seqId) => ({ seqId, numTokens: 1 }));

describe('groupByNumTokens', () => {
  it('groups by the positions added, in first-seen order', () => {
    const items = [
      { seqId: 'a', numTokens: 1 },
      { seqId: 'b', numTokens: 40 },
      { seqId: 'c', numTokens: 1 },
    ];
    expect(groupByNumTokens(items)).toEqual([[0, 2], [1]]);
  });

  it('without past lengths, a long sequence shares the decode run of short ones', () => {
    expect(groupByNumTokens(decodes(['t1', 'clip', 't2']))).toEqual([[0, 1, 2]]);
  });

  it("with past lengths, a clip's decode runs apart from the texts' and the texts keep one run", () => {
    const past = new Map([
      ['t1', 41],
      ['clip', 850],
      ['t2', 45],
      ['t3', 41],
    ]);
    const groups = groupByNumTokens(decodes(['t1', 'clip', 't2', 't3']), (id) => past.get(id)!);
    expect(groups).toEqual([[0, 3, 2], [1]]);
  });

  it('keeps short contexts together up to the spread and slack, and splits past them', () => {
    const shortest = 40;
    const edge = PAST_SPREAD * shortest + PAST_SLACK;
    const together = new Map([
      ['a', shortest],
      ['b', edge],
    ]);
    expect(groupByNumTokens(decodes(['a', 'b']), (id) => together.get(id)!)).toEqual([[0, 1]]);
    const apart = new Map([
      ['a', shortest],
      ['b', edge + 1],
    ]);
    expect(groupByNumTokens(decodes(['a', 'b']), (id) => apart.get(id)!)).toEqual([[0], [1]]);
  });

  it('a new run measures from its own shortest past', () => {
    const past = new Map([
      ['a', 0],
      ['b', 200],
      ['c', 500],
      ['d', 600],
    ]);
    // 200 > 2 x 0 + 128 starts a run at 200; 500 <= 2 x 200 + 128 joins it; 600 > 528 starts another.
    expect(groupByNumTokens(decodes(['d', 'c', 'b', 'a']), (id) => past.get(id)!)).toEqual([[3], [2, 1], [0]]);
  });

  it('refuses a repeated sequence and an empty item', () => {
    expect(() => groupByNumTokens(decodes(['a', 'a']))).toThrow(/twice/);
    expect(() => groupByNumTokens([{ seqId: 'a', numTokens: 0 }])).toThrow(/at least one/);
  });
});
