import { describe, expect, it } from 'vitest';
import {
  IdleWarmth,
  KEEP_WARM_MAX_SHARE,
  KEEP_WARM_MAX_STEP_MS,
  KEEP_WARM_MIN_PERIOD_MS,
  KEEP_WARM_TRIAL_STEPS,
  WARM_AFTER_IDLE_MS,
} from '../../src/worker/IdleWarmth.ts';

describe('IdleWarmth: an add warms the model after an idle stretch, once', () => {
  it('a stage that never stepped warms at its first add, and not again before a step', () => {
    const w = new IdleWarmth();
    expect(w.shouldWarm(5)).toBe(true);
    expect(w.shouldWarm(6)).toBe(false); // a burst of adds warms once
    expect(w.shouldWarm(10_000)).toBe(false);
  });

  it('warms when the last step ended WARM_AFTER_IDLE_MS or more before the add, not sooner', () => {
    const w = new IdleWarmth();
    w.stepped(1000);
    expect(w.shouldWarm(1000 + WARM_AFTER_IDLE_MS - 1)).toBe(false); // back-to-back requests: steps keep it warm
    expect(w.shouldWarm(1000 + WARM_AFTER_IDLE_MS)).toBe(true);
    expect(w.shouldWarm(1000 + 5 * WARM_AFTER_IDLE_MS)).toBe(false);
    w.stepped(2000); // a step starts a new stretch
    expect(w.shouldWarm(2000 + WARM_AFTER_IDLE_MS)).toBe(true);
  });

  it('takes its threshold from the constructor', () => {
    const w = new IdleWarmth(3);
    w.stepped(0);
    expect(w.shouldWarm(2)).toBe(false);
    expect(w.shouldWarm(3)).toBe(true);
  });
});

describe('IdleWarmth: a stage that keeps warm steps while idle, for keepWarmMs after its last step', () => {
  it('is due a period after its last step, then a period after each keep-warm step, until the window ends', () => {
    const w = new IdleWarmth(WARM_AFTER_IDLE_MS, 100);
    expect(w.keepWarmAtMs()).toBeNull(); // never stepped: the load's warm-up ran last
    w.stepped(1000);
    const due: number[] = [];
    for (let at = w.keepWarmAtMs(); at !== null; at = w.keepWarmAtMs()) {
      due.push(at);
      w.keptWarm(at, at); // a step that costs nothing
    }
    // Every KEEP_WARM_MIN_PERIOD_MS, the last one within 100 ms of the step.
    expect(due).toEqual([1015, 1030, 1045, 1060, 1075, 1090]);
    w.stepped(2000); // a request's step starts a new window
    expect(w.keepWarmAtMs()).toBe(2000 + KEEP_WARM_MIN_PERIOD_MS);
  });

  it('spaces its steps so they take at most KEEP_WARM_MAX_SHARE of the core', () => {
    const w = new IdleWarmth(WARM_AFTER_IDLE_MS, 10_000);
    w.stepped(0);
    const costMs = 2 * KEEP_WARM_MIN_PERIOD_MS * KEEP_WARM_MAX_SHARE; // a warm-up worth twice the shortest period
    w.keptWarm(15, 15 + costMs);
    expect(w.keepWarmAtMs()).toBeCloseTo(15 + costMs + 2 * KEEP_WARM_MIN_PERIOD_MS, 6);
    w.keptWarm(100, 100.1); // a cheap one: the shortest period again
    expect(w.keepWarmAtMs()).toBeCloseTo(100.1 + KEEP_WARM_MIN_PERIOD_MS, 6);
  });

  it('keeps warm no more when its first KEEP_WARM_TRIAL_STEPS steps all took longer than KEEP_WARM_MAX_STEP_MS', () => {
    const slowMs = KEEP_WARM_MAX_STEP_MS + 1;
    const slow = new IdleWarmth(WARM_AFTER_IDLE_MS, 100_000);
    slow.stepped(0);
    for (let i = 0; i < KEEP_WARM_TRIAL_STEPS; i++) {
      expect(slow.keepWarmAtMs()).not.toBeNull(); // judged only after its trial steps
      slow.keptWarm(1000 * (i + 1), 1000 * (i + 1) + slowMs);
    }
    expect(slow.keepWarmAtMs()).toBeNull();
    const cheap = new IdleWarmth(WARM_AFTER_IDLE_MS, 100_000);
    cheap.stepped(0);
    cheap.keptWarm(1000, 1000 + slowMs); // the first after a long idle, cold
    for (let i = 1; i < KEEP_WARM_TRIAL_STEPS; i++) cheap.keptWarm(1000 * (i + 1), 1000 * (i + 1) + 1);
    expect(cheap.keepWarmAtMs()).not.toBeNull(); // its cheapest decides
  });

  it('never keeps warm with keepWarmMs 0 (the default)', () => {
    const w = new IdleWarmth();
    w.stepped(0);
    expect(w.keepWarmAtMs()).toBeNull();
  });
});
