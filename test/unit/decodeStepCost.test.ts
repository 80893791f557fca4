/**
 * The CPU a decode step of n rows costs (src/sched/DecodeStepCost.ts), which speaking slices decide on: a fixed cost
 * a step and a cost a row, not the mean cost a row of whatever steps ran (bench/NOTES.md, "The first newcomer: an
 * audio burst, and slices switched on by one slow step").
 */
import { describe, expect, it } from 'vitest';
import { DecodeStepCost, NewcomerPrefillCost } from '../../src/sched/DecodeStepCost.ts';

/** tiny-omni's Thinker early in sixteen long answers: ~2.75 ms a step and 0.5 a row. */
const cost = (rows: number) => 2.75 + 0.5 * rows;

describe('DecodeStepCost', () => {
  it('knows nothing before three steps of a size', () => {
    const c = new DecodeStepCost();
    expect(c.estimate(16)).toBeNull();
    c.observe(16, cost(16));
    c.observe(16, cost(16));
    expect(c.estimate(16)).toBeNull();
    c.observe(16, cost(16));
    expect(c.estimate(16)).toBeCloseTo(cost(16));
  });

  it('is moved by no single slow step', () => {
    const c = new DecodeStepCost();
    for (const extra of [0, 0, 40, 0, 0]) c.observe(16, cost(16) + extra);
    expect(c.estimate(16)).toBeCloseTo(cost(16));
  });

  it('prices a step of sixteen from slices of four by the fixed cost fitted while both ran', () => {
    const c = new DecodeStepCost();
    for (let i = 0; i < 3; i++) c.observe(16, cost(16));
    for (let i = 0; i < 3; i++) c.observe(4, cost(4));
    expect(c.estimate(16)).toBeCloseTo(cost(16)); // the line through both sizes
    for (let i = 0; i < 20; i++) c.observe(4, cost(4)); // the steps of sixteen long gone: slices alone
    expect(c.estimate(16)).toBeCloseTo(cost(16)); // 10.75 ms, where 4 x a slice's 4.75 is 19
    expect(c.estimate(4)).toBeCloseTo(cost(4));
  });

  it('follows the cost a row of the slices as the contexts grow', () => {
    const c = new DecodeStepCost();
    for (let i = 0; i < 3; i++) c.observe(16, cost(16));
    for (let i = 0; i < 20; i++) c.observe(4, cost(4));
    for (let i = 0; i < 5; i++) c.observe(4, 2.75 + 4 * 1.5); // 1.5 ms a row now
    expect(c.estimate(16)).toBeCloseTo(2.75 + 16 * 1.5);
  });

  it('without a fit, prices by the largest size a row (no fixed cost known)', () => {
    const c = new DecodeStepCost();
    for (let i = 0; i < 3; i++) c.observe(4, 8);
    expect(c.estimate(16)).toBeCloseTo(32);
  });

  it('drops a size that has not run lately, and its old cost with it', () => {
    const c = new DecodeStepCost();
    for (let i = 0; i < 3; i++) c.observe(16, 30); // dear steps of sixteen
    for (let i = 0; i < 3; i++) c.observe(4, cost(4));
    for (let i = 0; i < 20; i++) c.observe(4, cost(4));
    c.observe(16, cost(16)); // sixteen again, cheaper: one fresh step does not count yet, nor do the old ones
    // The fit while both ran put the fixed cost below zero (kept at 0): the slices' cost a row prices sixteen.
    expect(c.estimate(16)).toBeCloseTo((cost(4) / 4) * 16);
  });
});

describe('NewcomerPrefillCost', () => {
  it('counts a prompt prefilled in pieces whole, at its first output', () => {
    const c = new NewcomerPrefillCost();
    c.prefilled(['a'], 8, true); // the first 45% of the rows
    expect(c.estimate()).toBeNull(); // not a prefill yet
    c.prefilled(['a'], 10, true); // the rest, sampling
    c.sampled('a');
    expect(c.estimate()).toBe(18);
    expect(c.pending).toBe(0);
  });

  it('shares a step of several new prompts among them', () => {
    const c = new NewcomerPrefillCost();
    c.prefilled(['a', 'b', 'c', 'd'], 40, true);
    for (const id of ['a', 'b', 'c', 'd']) c.sampled(id);
    expect(c.estimate()).toBe(10);
  });

  it('does not count a prefill that shared a step with other work, or was preempted', () => {
    const c = new NewcomerPrefillCost();
    c.prefilled(['a'], 12, true);
    c.sampled('a');
    c.prefilled(['b'], 5, true);
    c.prefilled(['b'], 30, false); // beside decodes: its CPU is not its own
    c.sampled('b');
    c.prefilled(['p'], 9, true);
    c.removed('p'); // preempted: its prefill starts again
    c.prefilled(['p'], 11, true);
    c.sampled('p');
    expect(c.estimate()).toBe((12 + 11) / 2);
  });

  it('keeps nothing for a request that left before its first output', () => {
    const c = new NewcomerPrefillCost();
    c.prefilled(['a', 'b'], 10, true);
    c.removed('a');
    c.removed('b');
    expect(c.pending).toBe(0);
    expect(c.estimate()).toBeNull();
  });

  it("adds how long a newcomer's input comes after its add, from the send (the take waited for a step)", () => {
    const c = new NewcomerPrefillCost();
    c.added('a', 1000);
    c.input('a', 1010, 1030); // sent 10 ms after the add, taken 20 ms later, behind a step
    c.input('a', 1050, 1051); // its later inputs measure nothing
    c.prefilled(['a'], 5, true);
    c.sampled('a');
    expect(c.estimate()).toBe(5 + 10);
    c.added('b', 2000);
    c.input('b', 2030, 2004); // the sender's clock 26 ms ahead of this host's: at most the take
    c.added('c', 3000);
    c.input('c', 2990, 3001); // sent before the add was read here: no wait
    expect(c.estimate()).toBe(5 + 4); // the median of 10, 4 and 0
    c.added('d', 4000);
    c.removed('d'); // left before its input came
    expect(c.pending).toBe(0);
    expect(new NewcomerPrefillCost().estimate()).toBeNull();
  });

  it("measures from main's admission, as far back as the add can have waited, never after its read", () => {
    const waitOf = (readAtMs: number, admittedAtMs: number, maxWayMs: number, sentAtMs: number) => {
      const c = new NewcomerPrefillCost();
      c.prefilled(['a'], 0.5, true);
      c.sampled('a');
      c.added('b', readAtMs, admittedAtMs, maxWayMs);
      c.input('b', sentAtMs, sentAtMs + 1);
      return c.estimate()! - 0.5;
    };
    expect(waitOf(1000, 985, 20, 1005)).toBe(20); // read 15 ms late, behind a step: counted
    expect(waitOf(1000, 900, 20, 1005)).toBe(25); // main's clock 80 ms behind: as far back as the add can wait
    expect(waitOf(1000, 1500, 20, 1005)).toBe(5); // main's clock ahead: from the read
  });

  it('is moved by no single slow prefill (the median of the last five)', () => {
    const c = new NewcomerPrefillCost();
    [18, 17, 90, 19, 18].forEach((ms, i) => {
      c.prefilled([`r${i}`], ms, true);
      c.sampled(`r${i}`);
    });
    expect(c.estimate()).toBe(18);
  });
});
