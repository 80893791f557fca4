/**
 * The Thinker's kept rows (src/sched/PositionRows.ts): one conditioning row [embedding | hidden] per position, as a
 * Talker takes them, so a cached prefix is handed over as one view; growth keeps what was written; truncate forgets
 * positions without moving the rest.
 */
import { describe, expect, it } from 'vitest';
import { PositionRows } from '../../src/sched/PositionRows.ts';

const D = 2;
/** count positions from `start`, each value naming (position, half): 10 * position + half. */
const half = (start: number, count: number, h: number) =>
  Float32Array.from({ length: count * D }, (_, i) => 10 * (start + Math.floor(i / D)) + h);

describe('PositionRows', () => {
  it('interleaves each position as [embedding | hidden], across growth', () => {
    const r = new PositionRows(D, 1);
    r.set(0, 2, half(0, 2, 1), half(0, 2, 2));
    r.set(2, 3, half(2, 3, 1), half(2, 3, 2)); // grows past its first buffer
    expect(r.length).toBe(5);
    expect(Array.from(r.rows(3))).toEqual([1, 1, 2, 2, 11, 11, 12, 12, 21, 21, 22, 22]);
  });

  it('copies rows from another one, and truncate keeps positions before the cut as they were', () => {
    const a = new PositionRows(D);
    a.set(0, 4, half(0, 4, 1), half(0, 4, 2));
    const b = new PositionRows(D, 1);
    b.setRows(0, 3, a.rows(3));
    expect(Array.from(b.rows(3))).toEqual(Array.from(a.rows(3)));
    a.truncate(2);
    expect(a.length).toBe(2);
    a.set(2, 1, half(9, 1, 1), half(9, 1, 2));
    expect(Array.from(a.rows(3))).toEqual([1, 1, 2, 2, 11, 11, 12, 12, 91, 91, 92, 92]);
  });

  it('grows by a quarter, not double: an entry holding the buffer counts little beyond its positions', () => {
    const r = new PositionRows(D, 100);
    r.set(0, 101, half(0, 101, 1), half(0, 101, 2));
    expect(r.bytes).toBe(125 * 2 * D * 4);
  });
});
