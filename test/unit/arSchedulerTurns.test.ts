/**
 * Seat turns (issue 41 item 5): long answers holding every seat yield them in turn, so a newcomer is seated within a
 * turn instead of waiting for one of them to finish (the CHORUS_ERR_CHUNK_TIMEOUT after 30 s).
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { step } from '../helpers/arSteps.ts';

const TURN = 4;
const opts = { maxNumSeqs: 2, maxNumBatchedTokens: 64, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20 };

function start(s: ArScheduler, available: Map<string, number>, ids: readonly string[], promptTokens = 5): void {
  for (const id of ids) {
    available.set(id, promptTokens);
    s.add(id, promptTokens);
  }
}

describe('ArScheduler seat turns', () => {
  it('a newcomer takes the seat of the longest holder within a turn; the holder keeps its KV and comes back', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    for (let i = 0; i < TURN + 2; i++) step(s, available);
    const aBefore = s.numComputed('a');
    start(s, available, ['c']);
    const plan = step(s, available);
    // Prefill first: the newcomer runs alone in the step it is seated in; a holder gave its seat up for it.
    expect(plan.items.map((i) => i.requestId)).toEqual(['c']);
    expect(s.numRunning).toBe(2);
    // The yielded holder ('a', seated first) keeps its positions: back in its turn, it decodes on, no recompute.
    expect(plan.preempted).toEqual([]);
    const seen = new Set<string>();
    for (let i = 0; i < 3 * TURN; i++) {
      const p = step(s, available);
      expect(p.items.length).toBeLessThanOrEqual(2);
      for (const item of p.items) seen.add(item.requestId);
    }
    expect(seen).toEqual(new Set(['a', 'b', 'c']));
    expect(s.numComputed('a')).toBeGreaterThan(aBefore);
  });

  it('shares the seats round-robin: nobody waits more than two turns, everyone gets about the same steps', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b', 'c']);
    const ran = new Map<string, number>();
    const waited = new Map<string, number>();
    let longestWait = 0;
    for (let i = 0; i < 60; i++) {
      const plan = step(s, available);
      expect(plan.items.length).toBeLessThanOrEqual(2);
      for (const id of ['a', 'b', 'c']) {
        const inStep = plan.items.some((item) => item.requestId === id);
        ran.set(id, (ran.get(id) ?? 0) + Number(inStep));
        waited.set(id, inStep ? 0 : (waited.get(id) ?? 0) + 1);
        longestWait = Math.max(longestWait, waited.get(id)!);
      }
    }
    expect(longestWait).toBeLessThanOrEqual(2 * TURN);
    const counts = [...ran.values()];
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(TURN + 1);
  });

  it('a newcomer does not wait for a turn to end: a holder that has run a step yields at once', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: 100 });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    step(s, available);
    step(s, available);
    start(s, available, ['c']);
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['c']);
  });

  it('a stream of newcomers cannot starve a yielded long answer: it is back within a few turns', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    let longestWait = 0;
    let waited = 0;
    for (let i = 0; i < 120; i++) {
      if (i % 2 === 0) start(s, available, [`new${i}`]); // a short chat every other step
      const plan = step(s, available);
      waited = plan.items.some((item) => item.requestId === 'a') ? 0 : waited + 1;
      longestWait = Math.max(longestWait, waited);
      for (const [id, n] of available) if (id.startsWith('new') && n >= 5 + 3) s.remove(id); // three outputs each
      for (const id of [...available.keys()]) if (!s.has(id)) available.delete(id);
    }
    expect(longestWait).toBeGreaterThan(0); // it did yield
    expect(longestWait).toBeLessThanOrEqual(6 * TURN); // the newcomers' four-turn lead, and a turn or two more
  });

  it('nobody yields while every request that wants a seat has one', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    for (let i = 0; i < 5 * TURN; i++)
      expect(step(s, available).items.map((item) => item.requestId)).toEqual(['a', 'b']);
  });

  it('a request waiting for its next chunk is not seated in a yielded seat (nothing to compute)', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    s.add('lazy', 0); // admitted lazily, on its first chunk
    for (let i = 0; i < 3 * TURN; i++)
      expect(step(s, available).items.map((item) => item.requestId)).toEqual(['a', 'b']);
    s.setAvailable('lazy', 3);
    available.set('lazy', 3);
    let seatedWithin = -1;
    for (let i = 0; i < 2 * TURN && seatedWithin < 0; i++)
      if (step(s, available).items.some((item) => item.requestId === 'lazy')) seatedWithin = i;
    expect(seatedWithin).toBeGreaterThanOrEqual(0);
  });

  it('without turns (the default) a newcomer waits for a holder to finish, as before', () => {
    const s = new ArScheduler(opts);
    const available = new Map<string, number>();
    start(s, available, ['a', 'b']);
    start(s, available, ['c']);
    for (let i = 0; i < 5 * TURN; i++)
      expect(step(s, available).items.map((item) => item.requestId)).toEqual(['a', 'b']);
    s.remove('a');
    expect(step(s, available).items.map((item) => item.requestId)).toContain('c');
  });
});
