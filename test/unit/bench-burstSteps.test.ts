import { describe, expect, it } from 'vitest';
import { clipPieces } from '../../bench/video/burstSteps.ts';
import type { ProcessTrace } from '../../bench/ttfp/account/packetAccount.ts';
import type { MarkRecord, StepRecord } from '../../src/basics.ts';

const step = (t: number, d: number, ...items: [string, number][]): StepRecord => ({ t, d, items });
const mark = (m: MarkRecord['m'], r: string, t: number): MarkRecord => ({ m, r, t });
const trace = (stage: string, steps: StepRecord[], marks: MarkRecord[]): ProcessTrace => ({
  stage,
  file: `${stage}_0-1.jsonl`,
  steps,
  marks,
});

describe('clipPieces', () => {
  // The burst is sent at 1000 and its texts at 1100; "old" is an earlier burst's clip, outside the window.
  const traces = [
    trace(
      'image-encoder',
      // The clip in two pieces: two steps, two chunks of rows at the Thinker.
      [step(500, 40, ['old', 1]), step(1120, 200, ['clip', 1]), step(1321, 59, ['clip', 1])],
      [mark('add', 'old', 450), mark('add', 'clip', 1090), mark('in', 'clip', 1110)],
    ),
    trace(
      'thinker',
      [
        step(1095, 3, ['clip', 30]), // the clip's text before the clip
        step(1130, 40, ['t1', 40], ['t2', 40]), // the texts' prefill while the clip encodes
        step(1330, 60, ['clip', 600]),
        step(1391, 10, ['t1', 1], ['t2', 1]), // the texts' decode, before the clip's last chunk
        step(1402, 30, ['clip', 210], ['t1', 1]),
        step(1500, 5, ['t3', 40]), // after the clip's first token: not before it
      ],
      [mark('add', 'clip', 1091), mark('in', 'clip', 1325), mark('in', 'clip', 1385)],
    ),
  ];

  it("finds the clip by the encoder's add in the window and times its chain from the send", () => {
    expect(clipPieces(traces, 1000, 1100, 2000)).toEqual({
      atEncoder: 90,
      mediaIn: 110,
      encode: [120, 260], // from the first piece's step to the end of the last's
      rowsIn: 325,
      rowsLastIn: 385,
      clipSteps: [
        [95, 3, 30, 1],
        [330, 60, 600, 1],
        [402, 30, 210, 2],
      ],
      textsBefore: 50,
    });
  });

  it('gives no pieces when no clip reached an encoder in the window', () => {
    expect(clipPieces(traces, 1600, 1600, 2000)).toMatchObject({ atEncoder: null, encode: null, clipSteps: [] });
  });
});
