import { describe, expect, it } from 'vitest';
import { IdleWarmth, WARM_AFTER_IDLE_MS } from '../../src/worker/IdleWarmth.ts';

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
