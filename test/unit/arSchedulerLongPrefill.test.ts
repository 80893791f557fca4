/**
 * longPrefillTokenThreshold: a request computes at most that many positions a step, so a long prefill (a clip's rows)
 * takes several short steps and a text request arriving meanwhile waits for one short step, not a step of the whole
 * budget; decodes and short prompts are untouched. splitFirstStep: a request's first step alone computes a share of
 * its prompt (the Thinker's first prefill in two at light load).
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler, type SchedulerPlan } from '../../src/sched/ArScheduler.ts';
import { step } from '../helpers/arSteps.ts';

const opts = { maxNumSeqs: 4, maxNumBatchedTokens: 64, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20 };

const shape = (plan: SchedulerPlan) => plan.items.map((i) => [i.requestId, i.startPosition, i.numTokens, i.sample]);
/** The items marked as a split first step's first piece (ScheduledItem.splitFirst). */
const firstPieces = (plan: SchedulerPlan) => plan.items.filter((i) => i.splitFirst).map((i) => i.requestId);

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

  it('splitFirstStep: a first step computes its share of what is pending, once; a short prompt is one step', () => {
    const s = new ArScheduler({ ...opts, maxNumBatchedTokens: 256 });
    const available = new Map([
      ['long', 119],
      ['short', 63],
      ['cached', 150],
    ]);
    s.add('long', 119);
    s.splitFirstStep('long', 0.45);
    const first = step(s, available);
    expect(shape(first)).toEqual([['long', 0, 54, false]]); // round(0.45 * 119)
    expect(firstPieces(first)).toEqual(['long']); // its second piece computes next
    const second = step(s, available);
    expect(shape(second)).toEqual([['long', 54, 65, true]]);
    expect(firstPieces(second)).toEqual([]);
    expect(shape(step(s, available))).toEqual([['long', 119, 1, true]]);
    s.add('short', 63);
    s.splitFirstStep('short', 0.45);
    const whole = step(s, available);
    expect(shape(whole).find(([id]) => id === 'short')).toEqual(['short', 0, 63, true]);
    expect(firstPieces(whole)).toEqual([]); // not split: one step
    // A cached prefix adopted (startAt): the share is of the positions left, 150 - 40.
    s.add('cached', 150);
    s.startAt('cached', 40);
    s.splitFirstStep('cached', 0.45);
    expect(shape(step(s, available)).find(([id]) => id === 'cached')).toEqual(['cached', 40, 50, false]);
    expect(() => s.splitFirstStep('long', 0.45)).toThrow(/has run already/);
  });

  it('without it a prefill takes the whole budget', () => {
    const s = new ArScheduler(opts);
    const available = new Map([['clip', 40]]);
    s.add('clip', 40);
    expect(shape(step(s, available))).toEqual([['clip', 0, 40, true]]);
    expect(() => new ArScheduler({ ...opts, longPrefillTokenThreshold: 0 })).toThrow(RangeError);
  });
});

/**
 * longPrefillsYield (the Thinker's): seed 000's burst in small. A clip request holds a seat with its text prefilled
 * while its rows encode; five texts of 12 positions wait (four seats); the clip's 100 rows arrive. Each text answers
 * one token and leaves. Returns, per step, the clip's positions and the texts that made their first token.
 */
function clipAmongTexts(longPrefillsYield: boolean): { clip: number; firsts: string[] }[] {
  const s = new ArScheduler({ ...opts, longPrefillsYield });
  s.add('clip', 8);
  s.setAvailable('clip', 8, false); // its text before the clip: context until the rows come
  s.update(s.schedule());
  const texts = ['t1', 't2', 't3', 't4', 't5'];
  for (const t of texts) s.add(t, 12);
  s.setAvailable('clip', 108);
  const steps: { clip: number; firsts: string[] }[] = [];
  while (s.size > 1 || s.numComputed('clip') < 108) {
    const plan = s.schedule();
    s.update(plan);
    const firsts = plan.items.filter((i) => i.sample && i.requestId !== 'clip').map((i) => i.requestId);
    for (const t of firsts) s.remove(t); // one token each
    steps.push({ clip: plan.items.find((i) => i.requestId === 'clip')?.numTokens ?? 0, firsts });
  }
  return steps;
}

describe('ArScheduler longPrefillsYield', () => {
  const clipBefore = (steps: ReturnType<typeof clipAmongTexts>, text: string) =>
    steps.slice(0, steps.findIndex((st) => st.firsts.includes(text)) + 1).reduce((n, st) => n + st.clip, 0);

  it('a clip prefills a seat share a step while short prompts wait, then the whole budget', () => {
    const steps = clipAmongTexts(true);
    // Share = 64 / 4 seats = 16. The three seated texts run alone (prefill first); the clip's share beside the last
    // two (seated as the first three left); then the clip's rest in steps of the whole budget.
    expect(steps).toEqual([
      { clip: 0, firsts: ['t1', 't2', 't3'] },
      { clip: 16, firsts: ['t4', 't5'] },
      { clip: 64, firsts: [] },
      { clip: 20, firsts: [] },
    ]);
    expect(clipBefore(steps, 't5')).toBe(16);
  });

  it('off, the clip (the oldest running request) takes the whole budget first and the texts wait for it', () => {
    const steps = clipAmongTexts(false);
    expect(steps[0]).toEqual({ clip: 64, firsts: [] });
    expect(clipBefore(steps, 't1')).toBe(100); // all of it: its last 36 beside the first texts
    expect(clipBefore(steps, 't5')).toBe(100);
  });
});

describe('ArScheduler longPrefillsYield, who it yields to', () => {
  it('not to a waiting prompt longer than a step, nor to a paused one: the running prefill keeps the budget', () => {
    for (const [id, positions, paused] of [
      ['long', 100, false],
      ['paused', 12, true],
    ] as const) {
      const s = new ArScheduler({ ...opts, longPrefillsYield: true });
      s.add('clip', 8);
      s.update(s.schedule()); // running, its first 8 computed
      s.setAvailable('clip', 108);
      s.add(id, positions);
      if (paused) s.pause(id);
      expect(s.schedule().items[0]).toMatchObject({ requestId: 'clip', numTokens: 64 });
    }
  });
});

describe('ArScheduler longPrefillsYield, who yields', () => {
  it('not a prompt that fits a step: a text admitted with part of its prompt finishes it beside a newcomer', () => {
    const s = new ArScheduler({ ...opts, longPrefillsYield: true, prefillFirst: false });
    const available = new Map([
      ['a', 60],
      ['b', 40],
    ]);
    s.add('a', 60);
    s.add('b', 40);
    expect(shape(step(s, available))).toEqual([
      ['a', 0, 60, true],
      ['b', 0, 4, false], // the 4 positions left of the step
    ]);
    available.set('c', 12);
    s.add('c', 12);
    expect(shape(step(s, available))).toEqual([
      ['a', 60, 1, true],
      ['b', 4, 36, true], // more than a seat's share (16), but its prompt fits a step: no yield
      ['c', 0, 12, true],
    ]);
  });
});
