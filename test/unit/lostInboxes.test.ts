/**
 * LostInboxes: the Redis lists of frames pushed into a lost remote instance are dropped at its loss, and once more
 * when the last instance still holding one of its runs lets it go (a frame pushed before that instance's abort may
 * land after the first drop); runs nobody else holds are done with at once.
 */
import { describe, expect, it } from 'vitest';
import { LostInboxes } from '../../src/engine/pool/LostInboxes.ts';

function harness() {
  const held = new Map<string, number>(); // run -> instances holding it
  const drops: string[] = [];
  const inboxes = new LostInboxes({
    heldAnywhere: (runId) => (held.get(runId) ?? 0) > 0,
    drop: (instance, runIds) => drops.push(`${instance}: ${runIds.join(' ')}`),
  });
  return { held, drops, inboxes };
}

describe('LostInboxes', () => {
  it('drops the lost instance`s lists at once, and again when the last holder of a run lets it go', () => {
    const { held, drops, inboxes } = harness();
    held.set('r1', 2); // the Thinker and Code2Wav still hold r1
    inboxes.lost('talker#b1', ['r1', 'r2']);
    expect(drops).toEqual(['talker#b1: r1 r2']);
    expect(inboxes.pendingRuns).toBe(1); // r2 is held by nobody: nothing more can be pushed for it

    held.set('r1', 1);
    inboxes.released('r1'); // one holder left: it may still push
    expect(drops).toHaveLength(1);
    held.set('r1', 0);
    inboxes.released('r1');
    expect(drops).toEqual(['talker#b1: r1 r2', 'talker#b1: r1']);
    expect(inboxes.pendingRuns).toBe(0);
    inboxes.released('r1'); // a late report changes nothing
    expect(drops).toHaveLength(2);
  });

  it('a run held when two instances were lost drops both lists once its last holder lets it go', () => {
    const { held, drops, inboxes } = harness();
    held.set('r1', 1);
    inboxes.lost('talker#b1', ['r1']);
    inboxes.lost('code2wav#b1', ['r1']);
    held.set('r1', 0);
    inboxes.released('r1');
    expect(drops).toEqual(['talker#b1: r1', 'code2wav#b1: r1', 'talker#b1: r1', 'code2wav#b1: r1']);
  });

  it('an instance lost with nothing in flight drops nothing; runs of no lost instance are not tracked', () => {
    const { held, drops, inboxes } = harness();
    inboxes.lost('talker#b1', []);
    held.set('r9', 0);
    inboxes.released('r9');
    expect(drops).toEqual([]);
    expect(inboxes.pendingRuns).toBe(0);
  });
});
