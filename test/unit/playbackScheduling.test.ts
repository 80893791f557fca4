/**
 * Playback-aware scheduling with fake clocks and fake step costs: who goes first, what waits a step, and that
 * fifo keeps its old order. The cost model is fitted from made-up step timings.
 */
import { describe, expect, it } from 'vitest';
import { ArScheduler } from '../../src/sched/ArScheduler.ts';
import { GenerationScheduler } from '../../src/sched/GenerationScheduler.ts';
import { initialChunkForTarget } from '../../src/sched/chunkPolicy.ts';
import { StepCostModel, stepBoundMs, unitsWithinBound, type StepCost } from '../../src/sched/playback.ts';

/** 2 ms per step plus 0.1 ms per token (or frame). */
const linear: StepCost = (units) => 2 + 0.1 * units;
const NOW = 1_000_000;

function arScheduler(policy: 'playback' | 'fifo'): ArScheduler {
  return new ArScheduler({
    maxNumSeqs: 8,
    maxNumBatchedTokens: 512,
    kvBytesPerToken: 1,
    kvBudgetBytes: 1 << 20,
    policy,
  });
}

describe('StepCostModel', () => {
  it('fits fixed + per-unit cost from steps of different sizes, and follows a change of load', () => {
    const m = new StepCostModel(0.9);
    expect(m.estimate(10)).toBeNull();
    for (let i = 0; i < 50; i++) m.observe(i % 2 === 0 ? 10 : 110, i % 2 === 0 ? 3 : 13);
    expect(m.estimate(10)).toBeCloseTo(3, 1);
    expect(m.estimate(60)).toBeCloseTo(8, 1);
    // The CPU is now shared: every step takes twice as long. The fit follows within a few dozen steps.
    for (let i = 0; i < 80; i++) m.observe(i % 2 === 0 ? 10 : 110, i % 2 === 0 ? 6 : 26);
    expect(m.estimate(60)).toBeCloseTo(16, 0);
  });

  it('scales a single step size proportionally (no slope to fit yet)', () => {
    const m = new StepCostModel();
    m.observe(4, 8);
    m.observe(4, 8);
    expect(m.estimate(8)).toBeCloseTo(16, 6);
  });
});

describe('step bounds', () => {
  it('splits the slack over the steps a request still needs; a missed deadline bounds nothing', () => {
    expect(stepBoundMs({ deadlineMs: NOW + 100, stepsNeeded: 4 }, NOW)).toBe(25);
    expect(stepBoundMs({ deadlineMs: NOW - 5, stepsNeeded: 1 }, NOW)).toBe(Infinity);
  });

  it('fits the largest share of a prefill that keeps the step within the bound', () => {
    // 10 tokens already in the step; bound 10 ms: 2 + 0.1 * (10 + n) <= 10 -> n <= 70.
    expect(unitsWithinBound(linear, 10, 500, 10)).toBe(70);
    expect(unitsWithinBound(linear, 10, 50, 10)).toBe(50);
    expect(unitsWithinBound(linear, 100, 5, 10)).toBe(0);
    expect(unitsWithinBound(() => null, 100, 5, 10)).toBe(5); // nothing measured yet: no bound
  });
});

describe('ArScheduler with playback scheduling', () => {
  it('decodes the request closest to running dry first and cuts a later prompt to fit its deadline', () => {
    for (const policy of ['playback', 'fifo'] as const) {
      const s = arScheduler(policy);
      s.add('early', 0); // arrived first, plenty of audio buffered
      s.add('late', 0); // arrived second, its listener runs dry soon
      s.add('new', 0); // a new request with a long prompt and a distant first-packet deadline
      for (const id of ['early', 'late']) {
        s.setAvailable(id, 1);
        s.update(s.schedule()); // prefilled (1 position each), now decoding
      }
      s.setAvailable('early', 2);
      s.setAvailable('late', 2);
      s.setAvailable('new', 400);
      s.setDeadline('early', { deadlineMs: NOW + 2000, stepsNeeded: 4 });
      s.setDeadline('late', { deadlineMs: NOW + 40, stepsNeeded: 4 }); // 10 ms per step
      s.setDeadline('new', { deadlineMs: NOW + 500, stepsNeeded: 5 });
      const plan = s.schedule({ nowMs: NOW, cost: linear });
      const items = plan.items.map((i) => [i.requestId, i.numTokens]);
      if (policy === 'fifo') {
        expect(items).toEqual([
          ['early', 1],
          ['late', 1],
          ['new', 400],
        ]);
      } else {
        // late first; early's decode fits; new's prompt only as far as the step stays within 10 ms.
        expect(items).toEqual([
          ['late', 1],
          ['early', 1],
          ['new', 78],
        ]);
        expect(plan.items[2].sample).toBe(false); // a prefill chunk: it samples when its prompt is done
        expect(linear(plan.numScheduledTokens)).toBeLessThanOrEqual(10);
      }
    }
  });

  it('lets everything run in one step when no deadline is at risk', () => {
    const s = arScheduler('playback');
    s.add('a', 200);
    s.add('b', 200);
    s.setDeadline('a', { deadlineMs: NOW + 5000, stepsNeeded: 2 });
    s.setDeadline('b', { deadlineMs: NOW + 6000, stepsNeeded: 2 });
    expect(s.schedule({ nowMs: NOW, cost: linear }).numScheduledTokens).toBe(400);
  });

  it('admits waiting requests by deadline, not arrival', () => {
    const s = new ArScheduler({
      maxNumSeqs: 1,
      maxNumBatchedTokens: 512,
      kvBytesPerToken: 1,
      kvBudgetBytes: 1 << 20,
      policy: 'playback',
    });
    s.add('first', 10);
    s.add('second', 10);
    s.setDeadline('first', { deadlineMs: NOW + 900, stepsNeeded: 1 });
    s.setDeadline('second', { deadlineMs: NOW + 100, stepsNeeded: 1 });
    expect(s.schedule({ nowMs: NOW, cost: linear }).items.map((i) => i.requestId)).toEqual(['second']);
  });

  it('never starves a request whose deadline has passed: it goes first and bounds nothing', () => {
    const s = arScheduler('playback');
    s.add('overdue', 5);
    s.add('other', 300);
    s.setDeadline('overdue', { deadlineMs: NOW - 50, stepsNeeded: 3 });
    s.setDeadline('other', { deadlineMs: NOW + 10_000, stepsNeeded: 1 });
    const plan = s.schedule({ nowMs: NOW, cost: linear });
    expect(plan.items.map((i) => [i.requestId, i.numTokens])).toEqual([
      ['overdue', 5],
      ['other', 300],
    ]);
  });
});

describe('GenerationScheduler with playback scheduling', () => {
  it('decodes least slack first and leaves big chunks with distant deadlines for the next step', () => {
    const fifo = new GenerationScheduler(16, 'fifo');
    const playback = new GenerationScheduler(16, 'playback');
    for (const s of [fifo, playback]) {
      s.chunkArrived('big1', 50); // 2 s chunks with 1 s of left context, 4 s of audio buffered
      s.chunkArrived('big2', 50);
      s.chunkArrived('first', 4); // a new request's first chunk, due in 30 ms
      s.setDeadline('big1', NOW + 4000);
      s.setDeadline('big2', NOW + 4000);
      s.setDeadline('first', NOW + 30);
    }
    expect(fifo.schedule({ nowMs: NOW, cost: linear }).map((i) => i.requestId)).toEqual(['big1', 'big2', 'first']);
    // 2 + 0.1 * (4 + 50) = 7.4 ms fits 30 ms; a second big chunk (12.4 ms) would too; a bound of 10 would not.
    expect(playback.schedule({ nowMs: NOW, cost: linear }).map((i) => i.requestId)).toEqual(['first', 'big1', 'big2']);
    playback.setDeadline('first', NOW + 10);
    expect(playback.schedule({ nowMs: NOW, cost: linear }).map((i) => i.requestId)).toEqual(['first', 'big1']);
  });

  it('takes the next chunk of a request once the previous is consumed, with its own size', () => {
    const s = new GenerationScheduler(4, 'playback');
    s.chunkArrived('a', 4);
    s.chunkArrived('a', 200);
    s.chunkArrived('b', 4);
    s.setDeadline('a', NOW + 5);
    s.setDeadline('b', NOW + 20);
    const first = s.schedule({ nowMs: NOW, cost: linear });
    expect(first.map((i) => i.requestId)).toEqual(['a', 'b']);
    s.update(first);
    s.setDeadline('a', NOW + 15); // the 4-frame chunk went out: more audio buffered
    // a's 200-frame chunk (22 ms) cannot join b's (bound 20 ms) and a is more urgent: a goes alone.
    expect(s.schedule({ nowMs: NOW, cost: linear }).map((i) => i.requestId)).toEqual(['a']);
  });
});

describe('initial chunk from a TTFP target', () => {
  const policy = {
    initialCodecChunkFrames: null,
    codecChunkFrames: 25,
    codecLeftContextFrames: 25,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 1000,
    ttfpTargetMs: null,
  };

  it('is the largest chunk that can still be out by the target, and reports a target out of reach', () => {
    // 100 ms left; prefill 20 ms yields frame 0; each further frame 10 ms -> 1 + 8 frames.
    expect(initialChunkForTarget(policy, 100, 20, 10)).toEqual({ frames: 9, met: true });
    expect(initialChunkForTarget(policy, 10_000, 20, 10)).toEqual({ frames: 25, met: true });
    expect(initialChunkForTarget(policy, 15, 20, 10)).toEqual({ frames: 1, met: false });
  });
});

describe('an early first chunk', () => {
  it('goes short of its size when asked, with no left context; later chunks keep their rule', async () => {
    const { nextCodecChunk } = await import('../../src/sched/chunkPolicy.ts');
    const policy = {
      initialCodecChunkFrames: null,
      codecChunkFrames: 25,
      codecLeftContextFrames: 25,
      dynamicInitialChunk: true,
      chunkTimeoutMs: 1000,
      ttfpTargetMs: null,
    };
    expect(nextCodecChunk(policy, 12, 3, 0, false)).toBeNull(); // 3 of 12 frames: waits
    expect(nextCodecChunk(policy, 12, 3, 0, false, true)).toEqual({ start: 0, contextFrames: 0, end: 3 });
    // The next chunk is at most as long as the audio already sent (3 frames), with those 3 as context.
    expect(nextCodecChunk(policy, 12, 6, 3, false)).toEqual({ start: 0, contextFrames: 3, end: 6 });
  });
});
