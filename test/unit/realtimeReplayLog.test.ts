/**
 * ReplayLog alone: events numbered in the order they are handed over, chorus_seq first on the wire, the last
 * maxBytes kept (the newest always), and what a client that saw everything up to some seq is owed: the events after
 * it, a gap when some are gone, or a refusal for a seq never sent.
 */
import { describe, expect, it } from 'vitest';
import { ReplayLog } from '../../src/server/realtime/ReplayLog.ts';

const event = (name: string, size = 0) => JSON.stringify({ type: 'x', event_id: name, pad: 'p'.repeat(size) });
const namesOf = (events: readonly { data: string }[]) =>
  events.map((e) => (JSON.parse(e.data) as { event_id: string }).event_id);

describe('ReplayLog', () => {
  it('numbers events from 1, with chorus_seq as the first field', () => {
    const log = new ReplayLog(1 << 20);
    const first = log.append(event('a'));
    log.append(event('b'));
    expect(first.startsWith('{"chorus_seq":1,')).toBe(true);
    expect(JSON.parse(first)).toEqual({ chorus_seq: 1, type: 'x', event_id: 'a', pad: '' });
    expect(log.lastSeq).toBe(2);
  });

  it('owes a client the events after its last seq, in order, and nothing when it is up to date', () => {
    const log = new ReplayLog(1 << 20);
    for (const name of ['a', 'b', 'c', 'd']) log.append(event(name));
    const replay = log.since(1);
    expect(replay.kind).toBe('events');
    if (replay.kind === 'events') {
      expect(namesOf(replay.events)).toEqual(['b', 'c', 'd']);
      expect(replay.events.map((e) => e.seq)).toEqual([2, 3, 4]);
    }
    expect(log.since(4)).toEqual({ kind: 'events', events: [] });
    expect(log.since(0).kind).toBe('events');
  });

  it('refuses a seq it never sent', () => {
    const log = new ReplayLog(1 << 20);
    log.append(event('a'));
    expect(log.since(5)).toEqual({ kind: 'ahead', lastSeq: 1 });
  });

  it('keeps only the last maxBytes: older seqs are a gap, the newest event is always kept', () => {
    const log = new ReplayLog(300);
    for (let i = 0; i < 10; i++) log.append(event(`e${i}`, 100));
    expect(log.bytes).toBeLessThanOrEqual(300);
    const gap = log.since(0);
    expect(gap.kind).toBe('gap');
    const oldest = gap.kind === 'gap' ? gap.oldestSeq : 0;
    expect(oldest).toBeGreaterThan(1);
    // From the one before the oldest kept, the client is owed every kept event.
    const kept = log.since(oldest - 1);
    expect(kept.kind === 'events' && kept.events.map((e) => e.seq)).toEqual(
      Array.from({ length: 10 - oldest + 1 }, (_, i) => oldest + i),
    );
    const huge = new ReplayLog(10);
    huge.append(event('big', 100));
    expect(huge.since(0).kind).toBe('events');
  });

  it('stays correct across many appends (its list compacts)', () => {
    const log = new ReplayLog(50 * 40);
    for (let i = 0; i < 5000; i++) log.append(event(`e${i}`));
    const replay = log.since(4990);
    expect(replay.kind === 'events' && namesOf(replay.events)).toEqual(
      Array.from({ length: 10 }, (_, i) => `e${4990 + i}`),
    );
  });
});
