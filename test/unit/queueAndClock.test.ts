/**
 * The throughput limit's on-CPU laps (bench/limit/runThroughput.ts): the run-queue wait and the clock are read as of
 * one moment, so a wait that ends between the two reads is charged to neither lap or to both, never to one only.
 */
import { describe, expect, it } from 'vitest';
import { queueAndClock } from '../../bench/limit/runThroughput.ts';

/** Readers over a script: the wait grows by `w` ms at the given read (a preemption that ends there). */
function machine(waits: ReadonlyMap<number, number>) {
  let reads = 0;
  let queued = 100;
  let clock = 1000;
  return {
    queue: () => {
      queued += waits.get(reads++) ?? 0;
      return queued;
    },
    clock: () => (clock += 1),
    get reads() {
      return reads;
    },
  };
}

describe('queueAndClock', () => {
  it('returns at once when no wait ended around the clock read', () => {
    const m = machine(new Map());
    expect(queueAndClock(m.queue, m.clock)).toEqual({ queuedMs: 100, atMs: 1001 });
    expect(m.reads).toBe(2);
  });

  it('reads again when a wait ended after the clock was read, so the wait is on the same side as the clock', () => {
    // The 10 ms wait ends at the second queue read (after the clock): a lap ending here would see the clock without
    // it and the queue with it (the -7.86 ms lap). The next pair agrees.
    const m = machine(new Map([[1, 10]]));
    expect(queueAndClock(m.queue, m.clock)).toEqual({ queuedMs: 110, atMs: 1002 });
    expect(m.reads).toBe(3);
  });

  it('gives up after its tries with the last reads, and passes a missing schedstat through', () => {
    const m = machine(new Map([1, 2, 3, 4, 5].map((i) => [i, 1])));
    expect(queueAndClock(m.queue, m.clock, 3)).toEqual({ queuedMs: 103, atMs: 1003 });
    expect(
      queueAndClock(
        () => null,
        () => 5,
      ),
    ).toEqual({ queuedMs: null, atMs: 5 });
  });
});
