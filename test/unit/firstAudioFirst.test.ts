/**
 * First audio first (issue 41 item 5): while a newcomer waits for its first audio, each stage leaves out the answers
 * that have been speaking for a while, within bounds that keep them going (src/sched/FirstAudioFirst.ts), and the
 * schedulers keep what they leave out (seats, KV, chunks) for the step after.
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { FirstAudioFirst, FIRST_AUDIO_FIRST_DEFAULTS } from '../../src/sched/FirstAudioFirst.ts';
import { GenerationScheduler } from '../../src/sched/GenerationScheduler.ts';
import { step } from '../helpers/arSteps.ts';
import type { SchedulerPlan } from '../../src/sched/ArScheduler.ts';

const { windowMs, maxDeferMs, settleMs } = FIRST_AUDIO_FIRST_DEFAULTS;

/** `ids` speaking since `atMs`. */
function speaking(f: FirstAudioFirst, ids: readonly string[], atMs: number): void {
  for (const id of ids) {
    f.added(id, atMs - 5);
    f.heard(id, atMs);
  }
}

describe('FirstAudioFirst', () => {
  it('holds back settled speakers while a newcomer waits, until its first audio', () => {
    const f = new FirstAudioFirst();
    speaking(f, ['a', 'b'], 0);
    speaking(f, ['young'], 5000 - settleMs / 2); // its listener has little buffered: never held back
    const t = 5000;
    expect(f.deferral(t)).toBeNull(); // nobody waits
    f.added('new', t);
    const d = f.deferral(t + 1);
    expect(d?.requestIds).toEqual(new Set(['a', 'b']));
    expect(d?.untilMs).toBe(t + windowMs);
    expect(f.deferral(t + 20)?.requestIds.size).toBe(2);
    f.heard('new', t + 30);
    expect(f.deferral(t + 31)).toBeNull();
  });

  it("a waiting request's window ends after windowMs even without its first audio", () => {
    const f = new FirstAudioFirst();
    speaking(f, ['a'], 0);
    f.added('new', 2000);
    expect(f.deferral(2000 + windowMs - 1)).not.toBeNull();
    expect(f.deferral(2000 + windowMs)).toBeNull();
    // Its first audio after its window (a loaded burst's): it speaks from then on, and is held back once settled.
    const heardAtMs = 2000 + windowMs + 5;
    f.heard('new', heardAtMs);
    f.added('next', heardAtMs + 100);
    expect(f.deferral(heardAtMs + 100)?.requestIds).toEqual(new Set(['a']));
    expect(f.deferral(heardAtMs + 100 + windowMs)).toBeNull(); // 'next' never heard: its window ran out
    f.added('later', heardAtMs + settleMs);
    expect(f.deferral(heardAtMs + settleMs)?.requestIds).toEqual(new Set(['a', 'new']));
  });

  it("never holds back an answer whose listener is not far enough ahead (the stage's mayHold)", () => {
    const f = new FirstAudioFirst();
    speaking(f, ['ahead', 'thin'], 0);
    f.added('new', 3000);
    expect(f.deferral(3000, (id) => id === 'ahead')?.requestIds).toEqual(new Set(['ahead']));
    expect(f.deferral(3010, () => false)).toBeNull(); // overload: every buffer thin, nothing held back
  });

  it('a request this stage is done with still holds the others back until its first audio', () => {
    const f = new FirstAudioFirst();
    speaking(f, ['a'], 0);
    f.added('short', 2000); // a Thinker writes a short answer before its audio is made
    f.removed('short');
    expect(f.deferral(2010)?.requestIds).toEqual(new Set(['a']));
    f.heard('short', 2020); // gone here: it does not become a speaker of this stage
    expect(f.deferral(2021)).toBeNull();
    f.added('next', 4000);
    expect(f.deferral(4000)?.requestIds).toEqual(new Set(['a']));
  });

  it('a stream of newcomers holds the speakers back at most maxDeferMs at once and half of the time', () => {
    const f = new FirstAudioFirst();
    speaking(f, ['a'], 0);
    const stepMs = 5;
    let held = 0;
    let run = 0;
    let longestRun = 0;
    const start = 2000;
    const end = start + 20 * windowMs;
    for (let t = start; t < end; t += stepMs) {
      if ((t - start) % 50 === 0) f.added(`n${t}`, t); // a newcomer every 50 ms, none ever heard
      const d = f.deferral(t);
      held += d ? stepMs : 0;
      run = d ? run + stepMs : 0;
      longestRun = Math.max(longestRun, run);
    }
    expect(longestRun).toBeLessThanOrEqual(maxDeferMs);
    // One stretch of maxDeferMs, then at most half of the rest (a step's worth of rounding).
    expect(held).toBeLessThanOrEqual(maxDeferMs + (end - start - maxDeferMs) / 2 + stepMs);
    expect(held / (end - start)).toBeGreaterThan(0.45); // and it does hold them back
  });
});

describe('schedulers leave the deferred out and keep them', () => {
  it('ArScheduler: beside 16 long answers a newcomer runs alone, first outputs in steps of one; theirs resume', () => {
    const s = new ArScheduler({
      maxNumSeqs: 16,
      maxNumBatchedTokens: 600,
      kvBytesPerToken: 1,
      kvBudgetBytes: 1 << 20,
      seatTurnSteps: 8,
    });
    const available = new Map<string, number>();
    const long = Array.from({ length: 16 }, (_, i) => `long${i}`);
    for (const id of long) {
      available.set(id, 20);
      s.add(id, 20);
    }
    for (let i = 0; i < 12; i++) step(s, available);
    const computed = long.map((id) => s.numComputed(id));
    available.set('new', 10);
    s.add('new', 10);
    s.setFirstOutputPending('new', true);
    const deferred = new Set(long);
    const plans = Array.from({ length: 4 }, () => stepDeferred(s, available, deferred));
    // Its prefill, then its decodes: every step the newcomer's alone, without waiting for a batch of 16.
    expect(plans.map((p) => p.items.map((i) => i.requestId))).toEqual([['new'], ['new'], ['new'], ['new']]);
    expect(plans[0].items[0].numTokens).toBe(10);
    // The long answers kept their KV (no recompute) and are back in the next step without a deferral.
    expect(long.map((id) => s.numComputed(id))).toEqual(computed);
    s.setFirstOutputPending('new', false); // its first chunk is out (the Talker's 2 frames)
    const after = step(s, available);
    expect(after.preempted).toEqual([]);
    // 16 seats for 17: seat turns let one long answer yield its seat to the newcomer (KV kept).
    expect(after.items.filter((i) => long.includes(i.requestId)).length).toBe(15);
  });

  it('GenerationScheduler: deferred chunks wait, in order, for the next step', () => {
    const s = new GenerationScheduler(16, 'fifo', true);
    for (const id of ['a', 'b']) s.chunkArrived(id);
    s.update(s.schedule()); // both speaking
    for (const id of ['a', 'b', 'a']) s.chunkArrived(id);
    s.chunkArrived('new');
    expect(s.schedule(Date.now(), new Set(['a', 'b'])).map((i) => i.requestId)).toEqual(['new']);
    s.update([{ requestId: 'new' }]);
    expect(s.schedule(Date.now(), new Set(['a', 'b']))).toEqual([]); // nothing else to do: the stage idles
    expect(s.schedule().map((i) => i.requestId)).toEqual(['a', 'b']);
  });
});

/** One step of the fake runner loop (test/helpers/arSteps.ts) with `deferred` left out. */
function stepDeferred(s: ArScheduler, available: Map<string, number>, deferred: ReadonlySet<string>): SchedulerPlan {
  const plan = s.schedule(Date.now(), deferred);
  s.update(plan);
  for (const item of plan.items) {
    if (!item.sample) continue;
    available.set(item.requestId, available.get(item.requestId)! + 1);
    s.setAvailable(item.requestId, available.get(item.requestId)!);
  }
  return plan;
}
