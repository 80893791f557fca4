/**
 * Far ahead, with hysteresis (issue 41 item 5; src/sched/FarAhead.ts): an answer's lead near the floor moves by about
 * a step each step, and tested against the floor alone the answer went in and out of first audio first's holds and the
 * speaking slices step after step, each flip a new Talker batch that repacked every row.
 */
import { describe, expect, it } from 'vitest';
import { FarAhead, HOLD_HYSTERESIS_MS } from '../../src/sched/FarAhead.ts';
import { HOLD_MIN_AHEAD_MS } from '../../src/sched/FirstAudioFirst.ts';

const FLOOR = HOLD_MIN_AHEAD_MS;

/** How many times the answer's test changed over these leads. */
function flips(ahead: FarAhead, leads: readonly number[]): number {
  let n = 0;
  let last: boolean | null = null;
  for (const lead of leads) {
    const far = ahead.test('a', lead);
    if (last !== null && far !== last) n++;
    last = far;
  }
  return n;
}

describe('FarAhead', () => {
  it('a lead jittering by a step about the floor flips once, not every step', () => {
    const jitter = Array.from({ length: 40 }, (_, i) => FLOOR + (i % 2 === 0 ? 40 : -40));
    expect(flips(new FarAhead(), [FLOOR + HOLD_HYSTERESIS_MS, ...jitter])).toBe(1);
    // Entering from below, the same jitter never makes it far ahead.
    const ahead = new FarAhead();
    expect(jitter.some((lead) => ahead.test('a', lead))).toBe(false);
  });

  it('is never far ahead below the floor, and far again only past the floor and the hysteresis', () => {
    const ahead = new FarAhead();
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS - 1)).toBe(false);
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS)).toBe(true);
    expect(ahead.test('a', FLOOR)).toBe(true); // far, and still at the floor
    expect(ahead.test('a', FLOOR - 1)).toBe(false);
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS - 1)).toBe(false);
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS)).toBe(true);
  });

  it('a lead it cannot tell is never far; each answer is its own, and a removed one starts anew', () => {
    const ahead = new FarAhead();
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS)).toBe(true);
    expect(ahead.test('b', FLOOR)).toBe(false);
    expect(ahead.test('a', null)).toBe(false);
    expect(ahead.test('a', FLOOR + HOLD_HYSTERESIS_MS)).toBe(true);
    ahead.removed('a');
    expect(ahead.test('a', FLOOR)).toBe(false);
  });
});
