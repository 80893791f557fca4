/** CarriedFrames: a frame that rides in its bell is delivered on its first sighting only, in either order. */
import { describe, expect, it } from 'vitest';
import { CarriedFrames } from '../../transport/redis/CarriedFrames.ts';
import {
  decodeBell,
  encodeBell,
  encodeElement,
  ringsWithFrame,
  BELL_FRAME_MAX_BYTES,
} from '../../transport/redis/layout.ts';

describe('CarriedFrames', () => {
  it('delivers the first sighting and drops the second, bell first or pop first', () => {
    const carried = new CarriedFrames();
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_talker_0')).toBe(true); // bell
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_talker_1')).toBe(true); // pop before its bell
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_talker_0')).toBe(false); // pop
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_talker_1')).toBe(false); // bell
    expect(carried.size).toBe(0);
  });

  it('keeps producers apart: the same key from two producers is two frames', () => {
    const carried = new CarriedFrames();
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_code2wav_0')).toBe(true);
    expect(carried.firstSighting('r1', 'talker#0', 'r1_code2wav_0')).toBe(true);
    expect(carried.firstSighting('r1', 'talker#0', 'r1_code2wav_0')).toBe(false);
    expect(carried.firstSighting('r1', 'thinker#0', 'r1_code2wav_0')).toBe(false);
  });

  it('forgets a request at its cleanup, and the oldest requests beyond its bound', () => {
    const carried = new CarriedFrames();
    carried.firstSighting('gone', 'thinker#0', 'gone_talker_0');
    carried.forget('gone');
    expect(carried.size).toBe(0);
    for (let i = 0; i < 5000; i++) carried.firstSighting(`r${i}`, 'thinker#0', `r${i}_talker_0`);
    expect(carried.size).toBe(4096);
    expect(carried.firstSighting('r0', 'thinker#0', 'r0_talker_0')).toBe(true); // r0 was dropped: seen anew
  });
});

describe('bells', () => {
  it('carry the list, and the element when one rides along', () => {
    const element = encodeElement('r1_talker_0', 'thinker#0', [new Uint8Array([1, 2, 3])]);
    const withFrame = decodeBell(encodeBell('chorus:{r1}:in:talker#0', element));
    expect(withFrame.list).toBe('chorus:{r1}:in:talker#0');
    expect(new Uint8Array(withFrame.element!)).toEqual(element);
    expect(decodeBell(encodeBell('chorus:{r1}:in:talker#0', null))).toEqual({
      list: 'chorus:{r1}:in:talker#0',
      element: null,
    });
  });

  it('carry small elements on one node only', () => {
    expect(ringsWithFrame(BELL_FRAME_MAX_BYTES, false)).toBe(true);
    expect(ringsWithFrame(BELL_FRAME_MAX_BYTES + 1, false)).toBe(false);
    expect(ringsWithFrame(100, true)).toBe(false);
  });
});
