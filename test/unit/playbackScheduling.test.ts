/**
 * Playback-aware scheduling with fake deadlines: who goes first when a step cannot take every ready request, and
 * that fifo keeps its old order.
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { GenerationScheduler } from '../../src/sched/GenerationScheduler.ts';
import { Ewma } from '../../src/sched/playback.ts';

const NOW = 1_000_000;

function arScheduler(policy: 'playback' | 'fifo', maxNumSeqs: number): ArScheduler {
  return new ArScheduler({ maxNumSeqs, maxNumBatchedTokens: 512, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20, policy });
}

describe('Ewma', () => {
  it('starts at the first observation and follows later ones', () => {
    const e = new Ewma(0.5);
    expect(e.value).toBeNull();
    e.observe(10);
    expect(e.value).toBe(10);
    e.observe(20);
    expect(e.value).toBe(15);
    e.observe(Number.NaN); // ignored
    expect(e.value).toBe(15);
  });
});

describe('ArScheduler with playback scheduling', () => {
  it('gives the step to the requests closest to running dry when it cannot take all of them', () => {
    const plan = (policy: 'playback' | 'fifo') => {
      // Three tokens a step: the three 1-token prompts fit the first; then each has 2 positions to compute.
      const s = new ArScheduler({
        maxNumSeqs: 3,
        maxNumBatchedTokens: 3,
        kvBytesPerToken: 1,
        kvBudgetBytes: 1 << 20,
        policy,
      });
      for (const id of ['early', 'late', 'soon']) s.add(id, 1);
      s.update(s.schedule());
      for (const id of ['early', 'late', 'soon']) s.setAvailable(id, 3);
      s.setDeadline('early', NOW + 2000); // arrived first, plenty of audio buffered
      s.setDeadline('late', NOW + 40); // its listener runs dry first
      s.setDeadline('soon', NOW + 300);
      return s.schedule(NOW).items.map((i) => [i.requestId, i.numTokens]);
    };
    expect(plan('fifo')).toEqual([
      ['early', 2],
      ['late', 1],
    ]);
    expect(plan('playback')).toEqual([
      ['late', 2],
      ['soon', 1],
    ]);
  });

  it('keeps the batch in arrival order whatever the deadlines: the same requests make the same batch', () => {
    const s = arScheduler('playback', 4);
    for (const id of ['a', 'b', 'c']) s.add(id, 1);
    const order = () => {
      const plan = s.schedule(NOW);
      s.update(plan);
      for (const { requestId } of plan.items) s.setAvailable(requestId, s.numComputed(requestId) + 1);
      return plan.items.map((i) => i.requestId);
    };
    const dueIn = (ms: Record<'a' | 'b' | 'c', number>) => {
      for (const [id, due] of Object.entries(ms)) s.setDeadline(id, NOW + due);
    };
    expect(order()).toEqual(['a', 'b', 'c']);
    dueIn({ a: 900, b: 500, c: 100 });
    expect(order()).toEqual(['a', 'b', 'c']);
    dueIn({ a: 10, b: 700, c: 300 });
    expect(order()).toEqual(['a', 'b', 'c']);
  });

  it('admits waiting requests by deadline, not arrival; those without one last', () => {
    const s = arScheduler('playback', 1);
    s.add('first', 10);
    s.add('second', 10);
    s.add('third', 10);
    s.setDeadline('second', NOW + 100);
    s.setDeadline('third', NOW + 900);
    expect(s.schedule(NOW).items.map((i) => i.requestId)).toEqual(['second']);
    const fifo = arScheduler('fifo', 1);
    fifo.add('first', 10);
    fifo.add('second', 10);
    fifo.setDeadline('second', NOW + 100);
    expect(fifo.schedule(NOW).items.map((i) => i.requestId)).toEqual(['first']);
  });
});

describe('GenerationScheduler with playback scheduling', () => {
  it('decodes least slack first; fifo keeps the oldest chunk first', () => {
    const fifo = new GenerationScheduler(2, 'fifo');
    const playback = new GenerationScheduler(2, 'playback');
    for (const s of [fifo, playback]) {
      s.chunkArrived('big1'); // 4 s of audio buffered
      s.chunkArrived('big2');
      s.chunkArrived('first'); // a new request's first chunk, due in 30 ms
      s.setDeadline('big1', NOW + 4000);
      s.setDeadline('big2', NOW + 3000);
      s.setDeadline('first', NOW + 30);
    }
    expect(fifo.schedule(NOW).map((i) => i.requestId)).toEqual(['big1', 'big2']);
    expect(playback.schedule(NOW).map((i) => i.requestId)).toEqual(['first', 'big2']);
  });

  it('serves overdue requests in arrival order, not the most overdue first (no domino under overload)', () => {
    const s = new GenerationScheduler(2, 'playback');
    for (const id of ['a', 'b', 'c']) s.chunkArrived(id);
    s.setDeadline('a', NOW - 10);
    s.setDeadline('b', NOW - 900); // the most overdue
    s.setDeadline('c', NOW + 50);
    expect(s.schedule(NOW).map((i) => i.requestId)).toEqual(['a', 'b']);
  });

  it('forgets the deadline of a removed request', () => {
    const s = new GenerationScheduler(1, 'playback');
    s.chunkArrived('a');
    s.setDeadline('a', NOW + 5);
    s.remove('a');
    s.chunkArrived('b');
    s.chunkArrived('a');
    expect(s.schedule(NOW)).toEqual([{ requestId: 'b' }]); // a came back without a deadline: after b's arrival
  });
});
