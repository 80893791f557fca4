/**
 * Seat turns (issue 41 item 5): long answers holding every seat yield them in turn, so a newcomer is seated within a
 * turn instead of waiting for one of them to finish (the CHORUS_ERR_CHUNK_TIMEOUT after 30 s).
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler, type SchedulerPlan } from '../../src/sched/ArScheduler.ts';
import { SpeakingSlices } from '../../src/sched/SpeakingSlices.ts';
import { step } from '../helpers/arSteps.ts';

const TURN = 4;
const NO_ONE: ReadonlySet<string> = new Set();
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

  it('a holder whose input stops yields within a turn of steps run: its idle steps count, and it yields first', () => {
    const s = new ArScheduler({ ...opts, seatTurnSteps: TURN });
    const available = new Map<string, number>();
    start(s, available, ['a', 'b', 'c']);
    for (let i = 0; i < 4 * TURN; i++) step(s, available);
    // 'a' gets no more input (a Talker whose rows stopped coming); once it has computed what it had it only waits.
    const stalled = available.get('a')!;
    available.delete('a');
    const batches: string[][] = [];
    for (let i = 0; i < 6 * TURN; i++) {
      const plan = s.schedule();
      s.update(plan);
      for (const item of plan.items) {
        if (item.requestId === 'a' || !item.sample) continue;
        available.set(item.requestId, available.get(item.requestId)! + 1);
        s.setAvailable(item.requestId, available.get(item.requestId)!);
      }
      batches.push(plan.items.map((item) => item.requestId));
    }
    expect(s.numComputed('a')).toBe(stalled);
    // The stated bound: once it has computed what it had, the stalled holder keeps its seat less than a turn of steps
    // run (its idle steps count, and it yields first), then 'b' and 'c', which have input, hold both seats.
    const lastRan = batches.findLastIndex((b) => b.includes('a'));
    const both = batches.findIndex((b, i) => i > lastRan && b.length === 2);
    expect(both).toBeGreaterThan(lastRan);
    expect(both - lastRan).toBeLessThanOrEqual(TURN);
    for (const b of batches.slice(both)) expect([...b].sort()).toEqual(['b', 'c']);
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

/**
 * Seventeen long answers on sixteen seats (bench/NOTES.md, "Seat turns that keep a batch"): a turn hands its seats over
 * at once and the batch it makes runs unchanged for a turn. Handing one seat over a step (every holder being past its
 * turn) made every step a new batch, and the runner repacked every sequence's KV every step.
 */
describe('ArScheduler seat turns keep a batch for a turn', () => {
  const SEATS = 16;
  const TURN_STEPS = 8;
  const STEPS = 200;
  const wide = { maxNumSeqs: SEATS, maxNumBatchedTokens: 600, kvBytesPerToken: 1, kvBudgetBytes: 1 << 20 };
  const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

  /**
   * Steps in which the runner repacks KV: a step's rows are fed back as is only when every one of them ran last in
   * exactly this batch (stages/models/SeqKvCache.ts sameBatch; a newcomer's first step is a prefill and always packs).
   */
  function countRepacks(batches: readonly (readonly string[])[]): number {
    const lastBatch = new Map<string, string>();
    let repacks = 0;
    for (const batch of batches) {
      const key = batch.join(',');
      if (!batch.every((id) => lastBatch.get(id) === key)) repacks++;
      for (const id of batch) lastBatch.set(id, key);
    }
    return repacks;
  }

  /** The longest run of steps any of `requestIds` went without computing (it waited for its seat). */
  function longestWait(batches: readonly (readonly string[])[], requestIds: readonly string[]): number {
    let longest = 0;
    for (const id of requestIds) {
      let waited = 0;
      for (const batch of batches) {
        waited = batch.includes(id) ? 0 : waited + 1;
        longest = Math.max(longest, waited);
      }
    }
    return longest;
  }

  /** `longCount` long answers with their first outputs out: the first SEATS seated, the rest arrived after them. */
  function seatedLong(longCount: number, turnSteps: number | null = TURN_STEPS) {
    const s = new ArScheduler({ ...wide, seatTurnSteps: turnSteps });
    const available = new Map<string, number>();
    const long = ids(longCount, 'long');
    start(s, available, long.slice(0, SEATS));
    for (let i = 0; i < TURN_STEPS + 2; i++) step(s, available);
    start(s, available, long.slice(SEATS));
    // The later ones' prefills run alone (prefill first) and take seats from holders at once (newcomers do not
    // wait for a turn); then the long answers decode and take turns.
    for (let i = 0; i < 2 * TURN_STEPS; i++) step(s, available);
    return { s, available, long };
  }

  const batchesOf = (plans: readonly SchedulerPlan[]) => plans.map((p) => p.items.map((i) => i.requestId));

  it('seventeen on sixteen seats: one handover a turn, the batch unchanged between, nobody waits past a turn', () => {
    const { s, available, long } = seatedLong(SEATS + 1);
    const batches = batchesOf(Array.from({ length: STEPS }, () => step(s, available)));
    const changedAt = batches.flatMap((b, i) => (i > 0 && b.join() !== batches[i - 1].join() ? [i] : []));
    expect(changedAt.length).toBeGreaterThan(0); // turns still happen
    for (let i = 1; i < changedAt.length; i++)
      expect(changedAt[i] - changedAt[i - 1]).toBeGreaterThanOrEqual(TURN_STEPS);
    for (const b of batches) expect(b.length).toBe(SEATS);
    // The stated bound: with E requests beyond the S seats, one waits at most ceil(E / S) turns (here one).
    expect(longestWait(batches, long)).toBeLessThanOrEqual(TURN_STEPS);
    expect(countRepacks(batches)).toBeLessThanOrEqual(Math.ceil(STEPS / TURN_STEPS) + 1);
  });

  it('a turn is steps run, not plans: wake-ups while every seated request waits for its input do not count', () => {
    const { s, available, long } = seatedLong(SEATS + 1);
    const batches: string[][] = [];
    for (let i = 0; i < STEPS; i++) {
      // The stage wakes three more times (a chunk elsewhere, a timer) before the outputs come back as input (a Talker
      // waiting for its rows): nothing seated has input, and the one without a seat waits for its turn.
      const ran = Array.from({ length: 4 }, () => {
        const plan = s.schedule();
        s.update(plan);
        if (plan.items.length > 0) batches.push(plan.items.map((item) => item.requestId));
        return plan.items;
      }).flat();
      for (const item of ran) {
        available.set(item.requestId, available.get(item.requestId)! + 1);
        s.setAvailable(item.requestId, available.get(item.requestId)!);
      }
    }
    // A handover's returner runs its pending input alone in a wake-up (a step of the turn), then the batch of sixteen
    // runs unchanged for the rest of the turn.
    const full = batches.filter((b) => b.length === SEATS);
    const changedAt = full.flatMap((b, i) => (i > 0 && b.join() !== full[i - 1].join() ? [i] : []));
    expect(changedAt.length).toBeGreaterThan(0);
    for (let i = 1; i < changedAt.length; i++)
      expect(changedAt[i] - changedAt[i - 1]).toBeGreaterThanOrEqual(TURN_STEPS - 1);
    expect(longestWait(batches, long)).toBeLessThanOrEqual(TURN_STEPS);
  });

  it('forty on sixteen seats: a turn hands every seat over at once; each waits at most ceil(24 / 16) turns', () => {
    const { s, available, long } = seatedLong(40);
    const batches = batchesOf(Array.from({ length: STEPS }, () => step(s, available)));
    expect(longestWait(batches, long)).toBeLessThanOrEqual(Math.ceil((40 - SEATS) / SEATS) * TURN_STEPS);
    expect(countRepacks(batches)).toBeLessThanOrEqual(Math.ceil(STEPS / TURN_STEPS) + 1);
    // Shared round-robin: each ran its share of the seats (16 of 40), less a turn or two (where the run cuts the
    // rotation, and the newcomers' start).
    const share = (STEPS * SEATS) / 40;
    for (const id of long)
      expect(batches.filter((b) => b.includes(id)).length).toBeGreaterThanOrEqual(share - 3 * TURN_STEPS);
  });

  it("a newcomer's first chunk, run alone, does not end the batch's turn: the batch changes once a turn it ran", () => {
    const { s, available, long } = seatedLong(SEATS + 1);
    // A newcomer whose first output stays pending: first outputs first runs it alone FIRST_OUTPUT_RUN_STEPS (4) steps
    // in a row, then one step with the batch. Counted in the stage's steps, a turn of eight was two of the batch's and
    // the batch changed every other time it ran.
    start(s, available, ['new']);
    s.setFirstOutputPending('new', true);
    const batches = batchesOf(Array.from({ length: STEPS }, () => step(s, available)));
    const ofBatch = batches.map((b) => b.filter((id) => id !== 'new')).filter((b) => b.length > 0);
    expect(ofBatch.length).toBeLessThan(STEPS / 2); // the newcomer did run alone most steps
    const changedAt = ofBatch.flatMap((b, i) => (i > 0 && b.join() !== ofBatch[i - 1].join() ? [i] : []));
    expect(changedAt.length).toBeGreaterThan(0); // turns still happen
    for (let i = 1; i < changedAt.length; i++)
      expect(changedAt[i] - changedAt[i - 1]).toBeGreaterThanOrEqual(TURN_STEPS);
    // Two beyond the seats now (the newcomer took one): each waits at most a turn of the batch's steps, and some of
    // those turns hold a handover step run alone.
    expect(longestWait(ofBatch, long)).toBeLessThanOrEqual(TURN_STEPS + 1);
  });

  it('sixteen on sixteen seats: no turns, one batch throughout', () => {
    const { s, available, long } = seatedLong(SEATS);
    const batches = batchesOf(Array.from({ length: STEPS }, () => step(s, available)));
    expect(new Set(batches.map((b) => b.join())).size).toBe(1);
    expect(batches[0]).toEqual(long);
  });

  /**
   * One step as ArStageCore runs it with speaking slices of `slices`, every long answer settled and far ahead: who
   * gave a seat up leaves its group, then the plan keeps one group (and whatever may not wait: `newcomers`).
   */
  function slicedStep(s: ArScheduler, slices: SpeakingSlices, available: Map<string, number>, newcomers = NO_ONE) {
    const plan = s.schedule();
    for (const id of [...plan.yielded, ...plan.preempted]) slices.removed(id);
    const kept = slices.keep(
      plan.items.map((it) => it.requestId),
      (id) => !newcomers.has(id),
      (rows) => rows * 16, // every step of more than one row is worth slicing
    );
    const items = kept ? plan.items.filter((it) => kept.has(it.requestId)) : plan.items;
    s.update({ ...plan, items, numScheduledTokens: items.reduce((n, it) => n + it.numTokens, 0) });
    for (const item of items) {
      if (!item.sample) continue;
      available.set(item.requestId, available.get(item.requestId)! + 1);
      s.setAvailable(item.requestId, available.get(item.requestId)!);
    }
    return items.map((it) => it.requestId);
  }

  it('with speaking slices, a handover changes one group: no group of one, a turn in the groups own steps', () => {
    const { s, available, long } = seatedLong(SEATS + 1);
    const slices = new SpeakingSlices(4);
    const batches = Array.from({ length: STEPS }, () => slicedStep(s, slices, available));
    // Sixteen seated answers in four groups of four. Kept in its group, the yielded answer made a fifth group: one
    // row a step, every fifth step.
    for (const b of batches) expect(b.length).toBe(4);
    // A turn is the holders' own steps: four groups, each a step in four, so a handover about every 4 * TURN_STEPS
    // steps (the first group to run eight times after one ends the turn), each changing one group once (a repack),
    // besides each group's first step: where two groups changed every TURN_STEPS steps (50 repacks).
    const turnStepsRun = 4 * TURN_STEPS;
    expect(countRepacks(batches)).toBeLessThanOrEqual(4 + Math.ceil(STEPS / (turnStepsRun - 4)) + 1);
    // A turn out, and its new group's place in the rotation of four.
    expect(longestWait(batches, long)).toBeLessThanOrEqual(turnStepsRun + 2 * 4);
  });

  it('a turn ends after 8 x seat_turn_steps steps of the stage however rarely its holders run (slices of one)', () => {
    // Sixteen groups of one: a holder runs one step in sixteen, a turn of its own steps would be 128 steps.
    const { s, available, long } = seatedLong(SEATS + 1);
    const slices = new SpeakingSlices(1);
    const batches = Array.from({ length: STEPS }, () => slicedStep(s, slices, available));
    // Out for a turn of 8 * TURN_STEPS steps, then back at its place in the rotation of sixteen.
    expect(longestWait(batches, long)).toBeLessThanOrEqual(8 * TURN_STEPS + SEATS);
  });

  it('a newcomer goes ahead of an answer that has waited a long turn: the lead is in turns, not steps', () => {
    // Slices of two: eight groups, so a turn of the holders' own steps is 64 steps of the stage. A newcomer's lead of
    // four turns of TURN_STEPS steps (32) made the yielded answer outrank it half-way through such a turn; it is four
    // turns of the length the last one took.
    const { s, available, long } = seatedLong(SEATS + 1);
    const slices = new SpeakingSlices(2);
    const batches: string[][] = [];
    const waitedSteps = () =>
      Math.max(...long.map((id) => batches.length - 1 - batches.findLastIndex((b) => b.includes(id))));
    while (batches.length < 4 * STEPS && (batches.length < STEPS / 2 || waitedSteps() < 5 * TURN_STEPS))
      batches.push(slicedStep(s, slices, available));
    expect(waitedSteps()).toBeGreaterThanOrEqual(5 * TURN_STEPS);
    start(s, available, ['new']);
    // Its prefill runs alone in the next step (prefill first), in a seat a holder gave up for it.
    expect(slicedStep(s, slices, available, new Set(['new']))).toEqual(['new']);
  });
});
