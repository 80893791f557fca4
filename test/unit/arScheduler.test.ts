import { describe, expect, it } from 'vitest';
import { ArScheduler, type SchedulerPlan } from '../../src/sched/ArScheduler.ts';
import { step } from '../helpers/arSteps.ts';

const opts = { maxNumSeqs: 4, maxNumBatchedTokens: 64, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20 };
/** Newcomers share the step with the decodes (no prefill-first step): the mixed step's own admission rules. */
const mixed = { ...opts, prefillFirst: false };

describe('ArScheduler', () => {
  it('prefills whole prompts within the budget, then decodes one token per request per step', () => {
    const s = new ArScheduler(opts);
    const available = new Map([
      ['a', 10],
      ['b', 20],
    ]);
    for (const [id, n] of available) s.add(id, n);
    const first = step(s, available);
    expect(first.items).toEqual([
      { requestId: 'a', startPosition: 0, numTokens: 10, sample: true },
      { requestId: 'b', startPosition: 0, numTokens: 20, sample: true },
    ]);
    const second = step(s, available);
    expect(second.items.map((i) => [i.requestId, i.startPosition, i.numTokens])).toEqual([
      ['a', 10, 1],
      ['b', 20, 1],
    ]);
  });

  it('computes context-only positions ahead without sampling, and samples once the next input is known', () => {
    const s = new ArScheduler(opts);
    s.add('t', 0);
    s.setAvailable('t', 5, false);
    const ahead = s.schedule();
    s.update(ahead);
    expect(ahead.items).toEqual([{ requestId: 't', startPosition: 0, numTokens: 5, sample: false }]);
    expect(s.status('t')).toBe('waiting_for_chunk');
    s.setAvailable('t', 6);
    expect(s.schedule().items).toEqual([{ requestId: 't', startPosition: 5, numTokens: 1, sample: true }]);
  });

  it('chunks a prefill longer than the token budget and samples only at its end', () => {
    const s = new ArScheduler({ ...opts, maxNumBatchedTokens: 16 });
    const available = new Map([['a', 40]]);
    s.add('a', 40);
    const plans = [step(s, available), step(s, available), step(s, available)];
    expect(plans.map((p) => p.items[0].numTokens)).toEqual([16, 16, 8]);
    expect(plans.map((p) => p.items[0].sample)).toEqual([false, false, true]);
  });

  it('shares the budget: a long prefill does not stop running requests from decoding', () => {
    const s = new ArScheduler({ ...opts, maxNumBatchedTokens: 16 });
    const available = new Map([['a', 4]]);
    s.add('a', 4);
    step(s, available);
    available.set('b', 100);
    s.add('b', 100);
    const plan = step(s, available);
    expect(plan.items).toEqual([
      { requestId: 'a', startPosition: 4, numTokens: 1, sample: true },
      { requestId: 'b', startPosition: 0, numTokens: 15, sample: false },
    ]);
  });

  it('admits no prompt beside a request whose first output is pending; a waiting or done one holds nobody', () => {
    const s = new ArScheduler({ ...mixed, maxNumBatchedTokens: 16 });
    const available = new Map([['a', 4]]);
    s.add('a', 4);
    s.setFirstOutputPending('a', true);
    step(s, available);
    available.set('b', 8);
    s.add('b', 8);
    // a computes toward its first output: b waits, and a's steps stay decode steps.
    for (let i = 0; i < 3; i++) expect(step(s, available).items.map((x) => x.requestId)).toEqual(['a']);
    expect(s.status('b')).toBe('waiting');
    // a waits for its next input: it is not in the step, so it holds nobody back.
    s.setAvailable('a', s.numComputed('a'));
    available.set('a', s.numComputed('a') - 1); // the fake loop's feedback stays off until a's input comes
    expect(step(s, available).items).toEqual([{ requestId: 'b', startPosition: 0, numTokens: 8, sample: true }]);
    // Its first output out, a no longer holds anyone: c is admitted beside both.
    s.setAvailable('a', s.numComputed('a') + 1);
    available.set('a', s.numComputed('a') + 1);
    s.setFirstOutputPending('a', false);
    available.set('c', 5);
    s.add('c', 5);
    expect(step(s, available).items.map((x) => [x.requestId, x.numTokens])).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 5],
    ]);
  });

  it('never runs more than maxNumSeqs requests and admits in FIFO order', () => {
    const s = new ArScheduler({ ...mixed, maxNumSeqs: 2 });
    const available = new Map([
      ['a', 2],
      ['b', 2],
      ['c', 2],
    ]);
    for (const [id, n] of available) s.add(id, n);
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['a', 'b']);
    s.remove('a');
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['b', 'c']);
  });

  it('skips a request waiting for its next chunk without blocking the others', () => {
    const s = new ArScheduler(opts);
    s.add('talker-a', 5);
    s.add('talker-b', 5);
    const plan1 = s.schedule();
    s.update(plan1);
    // a's next conditioning row has not arrived; b's has.
    s.setAvailable('talker-b', 6);
    expect(s.status('talker-a')).toBe('waiting_for_chunk');
    const plan2 = s.schedule();
    expect(plan2.items.map((i) => i.requestId)).toEqual(['talker-b']);
    s.update(plan2);
    s.setAvailable('talker-a', 6);
    expect(s.schedule().items.map((i) => i.requestId)).toEqual(['talker-a']);
  });

  it('does not admit a request before its first chunk (lazy admission)', () => {
    const s = new ArScheduler(opts);
    s.add('late', 0);
    expect(s.schedule().items).toEqual([]);
    expect(s.status('late')).toBe('waiting');
    s.setAvailable('late', 3);
    expect(s.schedule().items).toEqual([{ requestId: 'late', startPosition: 0, numTokens: 3, sample: true }]);
  });

  it('preempts the newest running request when the KV budget would be exceeded, and recomputes it later', () => {
    const s = new ArScheduler({ ...opts, kvBudgetBytes: 25 });
    const available = new Map([
      ['old', 10],
      ['new', 10],
    ]);
    for (const [id, n] of available) s.add(id, n);
    step(s, available); // both prefilled: 20 tokens of KV
    for (let i = 0; i < 2; i++) step(s, available); // 24 tokens of KV
    const plan = step(s, available); // old needs 1 more: fits, new does not
    expect(plan.preempted).toEqual(['new']);
    expect(plan.items.map((i) => i.requestId)).toEqual(['old']);
    s.remove('old');
    const again = s.schedule();
    expect(again.items).toEqual([
      { requestId: 'new', startPosition: 0, numTokens: available.get('new')!, sample: true },
    ]);
  });

  it('holds back a paused request and resumes it where it stopped', () => {
    const s = new ArScheduler(opts);
    const available = new Map([
      ['a', 3],
      ['b', 3],
    ]);
    for (const [id, n] of available) s.add(id, n);
    step(s, available);
    s.pause('a');
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['b']);
    s.resume('a');
    expect(s.schedule().items.map((i) => [i.requestId, i.startPosition])).toEqual([
      ['a', 3],
      ['b', 4],
    ]);
  });

  it('a paused request gives its slot up at once and keeps its KV: a waiting one is admitted in its place', () => {
    const s = new ArScheduler({ ...mixed, maxNumSeqs: 2 });
    const available = new Map([
      ['a', 3],
      ['b', 3],
    ]);
    for (const [id, n] of available) s.add(id, n);
    step(s, available);
    available.set('c', 3);
    s.add('c', 3);
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['a', 'b']); // full: c waits
    s.pause('a');
    expect(s.numRunning).toBe(1);
    const plan = step(s, available);
    expect(plan.items.map((i) => [i.requestId, i.startPosition])).toEqual([
      ['b', 4],
      ['c', 0],
    ]);
    expect(plan.preempted).toEqual([]);
    expect(s.status('a')).toBe('paused');
    expect(s.numComputed('a')).toBe(4); // its KV stays
    expect([s.numRunning, s.numPaused]).toEqual([2, 1]);
  });

  it('with every slot held by paused requests, new ones still run (the issue 33 stall)', () => {
    const s = new ArScheduler({ ...opts, maxNumSeqs: 3 });
    const available = new Map<string, number>();
    for (const id of ['p0', 'p1', 'p2']) {
      available.set(id, 4);
      s.add(id, 4);
    }
    step(s, available);
    for (const id of ['p0', 'p1', 'p2']) s.pause(id);
    available.set('new', 6);
    s.add('new', 6);
    expect(step(s, available).items).toEqual([{ requestId: 'new', startPosition: 0, numTokens: 6, sample: true }]);
    expect(step(s, available).items.map((i) => [i.requestId, i.startPosition])).toEqual([['new', 6]]);
  });

  it('resumed requests wait for a free slot (never overfilling the batch), then run on where they stopped', () => {
    const s = new ArScheduler({ ...opts, maxNumSeqs: 2 });
    const available = new Map([
      ['a', 3],
      ['b', 3],
    ]);
    for (const [id, n] of available) s.add(id, n);
    step(s, available);
    s.pause('a');
    s.pause('b');
    for (const id of ['c', 'd', 'e']) {
      available.set(id, 3);
      s.add(id, 3);
    }
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['c', 'd']);
    s.resume('a');
    s.resume('b');
    // Both slots are taken: a and b wait a step with their KV, and e behind them.
    const full = step(s, available);
    expect(full.items.map((i) => i.requestId)).toEqual(['c', 'd']);
    expect(full.preempted).toEqual([]);
    expect(s.status('a')).toBe('running');
    // A slot frees: the oldest resumed request takes it, ahead of e, from the position it had reached.
    s.remove('c');
    expect(step(s, available).items.map((i) => [i.requestId, i.startPosition])).toEqual([
      ['a', 3],
      ['d', 4],
    ]);
    s.remove('d');
    expect(step(s, available).items.map((i) => [i.requestId, i.startPosition])).toEqual([
      ['a', 4],
      ['b', 3],
    ]);
    expect(s.status('e')).toBe('waiting');
  });

  it('short of KV, a paused request is preempted first (only when that makes room) and recomputes later', () => {
    const s = new ArScheduler({ ...opts, kvBudgetBytes: 25 });
    const available = new Map([['p', 10]]);
    s.add('p', 10);
    step(s, available); // p: 10 positions of KV
    s.pause('p');
    // 30 positions could never fit beside or without p: p keeps its KV and nobody is admitted.
    available.set('huge', 30);
    s.add('huge', 30);
    const none = step(s, available);
    expect(none.items).toEqual([]);
    expect(none.preempted).toEqual([]);
    expect(s.numComputed('p')).toBe(10);
    s.remove('huge');
    available.delete('huge');
    // 20 positions fit once p's 10 go.
    available.set('n', 20);
    s.add('n', 20);
    const plan = step(s, available);
    expect(plan.preempted).toEqual(['p']);
    expect(plan.items.map((i) => i.requestId)).toEqual(['n']);
    expect(s.status('p')).toBe('paused');
    expect(s.numComputed('p')).toBe(0);
    // Resumed, it is admitted again when its KV fits, from position 0.
    s.resume('p');
    expect(step(s, available).items.map((i) => i.requestId)).toEqual(['n']);
    s.remove('n');
    expect(s.schedule().items).toEqual([{ requestId: 'p', startPosition: 0, numTokens: 11, sample: true }]);
  });

  it('a running request short of KV preempts a paused one before any running one', () => {
    const s = new ArScheduler({ ...opts, kvBudgetBytes: 24 });
    const available = new Map([
      ['a', 8],
      ['p', 8],
      ['c', 7],
    ]);
    for (const [id, n] of available) s.add(id, n);
    step(s, available); // 23 positions of KV
    s.pause('p');
    const plan = step(s, available); // a and c need 2 more: 25 > 24
    expect(plan.preempted).toEqual(['p']);
    expect(plan.items.map((i) => i.requestId)).toEqual(['a', 'c']);
  });

  it('ignores an abort that races with the step it was scheduled in', () => {
    const s = new ArScheduler(opts);
    s.add('a', 3);
    const plan = s.schedule();
    s.remove('a');
    expect(() => s.update(plan)).not.toThrow();
    expect(s.size).toBe(0);
  });

  describe('prefill first', () => {
    /** a and b decoding; c arrives with a 6-position prompt. */
    function decodingPair(options = opts): { s: ArScheduler; available: Map<string, number> } {
      const s = new ArScheduler(options);
      const available = new Map([
        ['a', 3],
        ['b', 3],
      ]);
      for (const [id, n] of available) s.add(id, n);
      step(s, available);
      step(s, available);
      available.set('c', 6);
      s.add('c', 6);
      return { s, available };
    }
    const ids = (plan: SchedulerPlan): [string, number][] => plan.items.map((i) => [i.requestId, i.numTokens]);

    it("runs a newcomer's whole prompt alone, then everyone decodes together", () => {
      const { s, available } = decodingPair();
      const alone = step(s, available);
      expect(alone.items).toEqual([{ requestId: 'c', startPosition: 0, numTokens: 6, sample: true }]);
      expect(alone.numScheduledTokens).toBe(6);
      expect(ids(step(s, available))).toEqual([
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]);
    });

    it('never runs newcomers alone twice in a row: arrivals every step cannot starve the decodes', () => {
      const { s, available } = decodingPair({ ...opts, maxNumSeqs: 8 });
      const plans: string[] = [];
      for (const id of ['d', 'e', 'f', 'g']) {
        plans.push(ids(step(s, available)).join(' '));
        available.set(id, 2);
        s.add(id, 2);
      }
      expect(plans).toEqual(['c,6', 'a,1 b,1 c,1 d,2', 'e,2', 'a,1 b,1 c,1 d,1 e,1 f,2']);
    });

    it('a prompt longer than the step budget is chunked beside the decodes, as before', () => {
      const { s, available } = decodingPair({ ...opts, maxNumBatchedTokens: 5 });
      expect(ids(step(s, available))).toEqual([
        ['a', 1],
        ['b', 1],
        ['c', 3],
      ]);
    });

    it('a context-only prompt (no first output to hurry) shares the step', () => {
      const { s } = decodingPair();
      s.setAvailable('c', 6, false);
      expect(ids(s.schedule())).toEqual([
        ['a', 1],
        ['b', 1],
        ['c', 6],
      ]);
    });

    it('first outputs first: a request making its first output steps alone, at most 4 steps in a row', () => {
      const { s, available } = decodingPair();
      s.setFirstOutputPending('c', true);
      expect(ids(step(s, available))).toEqual([['c', 6]]); // its prompt (prefill first)
      const plans = Array.from({ length: 5 }, () => ids(step(s, available)).join(' '));
      // Three more steps alone make four in a row; then a and b decode beside it, and it runs alone again.
      expect(plans).toEqual(['c,1', 'c,1', 'c,1', 'a,1 b,1 c,1', 'c,1']);
      s.setFirstOutputPending('c', false); // its first output is out: one batch again
      expect(ids(step(s, available))).toEqual([
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]);
    });

    it('first outputs first: no step of its own when every request in the step makes its first output', () => {
      const { s, available } = decodingPair();
      for (const id of ['a', 'b', 'c']) s.setFirstOutputPending(id, true);
      expect(ids(step(s, available))).toEqual([
        ['a', 1],
        ['b', 1],
      ]);
    });

    it('prefillFirst: false keeps the mixed step', () => {
      const { s, available } = decodingPair(mixed);
      expect(ids(step(s, available))).toEqual([
        ['a', 1],
        ['b', 1],
        ['c', 6],
      ]);
    });
  });
});
