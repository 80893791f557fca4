/**
 * longPrefillTokenThreshold: a request computes at most that many positions a step, so a long prefill (a clip's rows)
 * takes several short steps and a text request arriving meanwhile waits for one short step, not a step of the whole
 * budget; decodes and short prompts are untouched.
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler, type SchedulerPlan } from '../../src/sched/ArScheduler.ts';
import { step } from '../helpers/arSteps.ts';

const opts = { maxNumSeqs: 4, maxNumBatchedTokens: 64, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20 };

const shape = (plan: SchedulerPlan) => plan.items.map((i) => [i.requestId, i.startPosition, i.numTokens, i.sample]);

describe('ArScheduler longPrefillTokenThreshold', () => {
  it('cuts a long prefill into steps of the threshold; a text arriving meanwhile runs after one of them', () => {
    const s = new ArScheduler({ ...opts, longPrefillTokenThreshold: 16 });
    const available = new Map([['clip', 40]]);
    s.add('clip', 40);
    expect(shape(step(s, available))).toEqual([['clip', 0, 16, false]]);
    available.set('text', 8);
    s.add('text', 8);
    // The newcomer's whole prompt fits: it runs alone (prefill first), ahead of the clip's next chunk.
    expect(shape(step(s, available))).toEqual([['text', 0, 8, true]]);
    expect(shape(step(s, available))).toEqual([
      ['clip', 16, 16, false],
      ['text', 8, 1, true],
    ]);
    expect(shape(step(s, available))).toEqual([
      ['clip', 32, 8, true],
      ['text', 9, 1, true],
    ]);
  });

  it('caps a newcomer too, and leaves the rest of the budget to the others', () => {
    const s = new ArScheduler({ ...opts, longPrefillTokenThreshold: 16, prefillFirst: false });
    const available = new Map([
      ['long', 50],
      ['short', 10],
    ]);
    s.add('long', 50);
    s.add('short', 10);
    expect(shape(step(s, available))).toEqual([
      ['long', 0, 16, false],
      ['short', 0, 10, true],
    ]);
  });

  it('without it a prefill takes the whole budget', () => {
    const s = new ArScheduler(opts);
    const available = new Map([['clip', 40]]);
    s.add('clip', 40);
    expect(shape(step(s, available))).toEqual([['clip', 0, 40, true]]);
    expect(() => new ArScheduler({ ...opts, longPrefillTokenThreshold: 0 })).toThrow(RangeError);
  });
});
