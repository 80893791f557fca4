/**
 * The tts stage's lead rule (stages/tts/lead.ts) over a measured pace (speechPace.ts): a later phrase is cut early
 * only while its listener's runway still covers the synthesis due before it, by less than the margin; the runway
 * counts the audio sent and queued, and the synthesis due counts the request's own queue and the other listeners'
 * sentences due before it runs dry.
 */
import { describe, expect, it } from 'vitest';
import { leadView, mustCutEarly, type LeadRequest } from '../../stages/tts/lead.ts';
import { SpeechPace } from '../../stages/tts/speechPace.ts';

/** 2 ids per character, 1 ms of synthesis and 10 ms of audio per id. */
function pace(): SpeechPace {
  const p = new SpeechPace();
  p.countPhrase(50, 100);
  p.countAudio(100, 1000);
  p.measureRun([100], 100);
  return p;
}

const idle = (dryAtMs: number | null, queuedIds: number[] = [], phonemizingChars = 0): LeadRequest => ({
  queuedIds,
  phonemizingChars,
  dryAtMs,
});

describe('lead rule', () => {
  it('cuts only while the runway covers the synthesis due, by less than the margin', () => {
    expect(mustCutEarly({ runwayMs: 300, pendingMs: 100, aheadMs: 50 }, 2)).toBe(false); // time to wait
    expect(mustCutEarly({ runwayMs: 299, pendingMs: 100, aheadMs: 50 }, 2)).toBe(true);
    expect(mustCutEarly({ runwayMs: 150, pendingMs: 100, aheadMs: 50 }, 2)).toBe(true);
    expect(mustCutEarly({ runwayMs: 149, pendingMs: 100, aheadMs: 50 }, 2)).toBe(false); // late whatever is done
    expect(mustCutEarly({ runwayMs: 200, pendingMs: 100, aheadMs: 50 }, 0)).toBe(false); // off
  });

  it("counts the runway from the audio sent and queued, the request's own queue and others' due before it", () => {
    const p = pace();
    const now = 10_000;
    // Plays until now + 500, then 30 queued ids (300 ms of audio) and 10 characters phonemizing (20 ids, 200 ms).
    const req = idle(now + 500, [30, 0], 10);
    const early = idle(now + 100, [40]); // due in 100 ms: before req runs dry (counted)
    const late = idle(now + 5_000, [70]); // due in 5 s: after (not counted)
    const silent = idle(null, [25]); // no audio yet: its first sentence is due now (counted)
    const view = leadView(req, 40, [req, early, late, silent], p, now);
    expect(view).toEqual({ runwayMs: 1000, pendingMs: 80, aheadMs: 30 + 20 + 40 + 25 });
  });

  it('knows no cost before the first run', () => {
    const p = new SpeechPace();
    p.countPhrase(50, 100);
    expect(leadView(idle(0), 40, [], p, 0)).toBeNull();
    expect(p.audioMsOf(10)).toBe(0); // nor any audio: no runway is counted on
  });

  it('follows the measured cost per position as runs come, smoothed', () => {
    const p = pace(); // 1 ms per position
    p.measureRun([50, 40], 200); // 2 ms per position (2 rows x 50)
    expect(p.costMs(10)).toBeCloseTo(10 * 1.3);
    expect(p.costMs(10, 2)).toBeCloseTo(2 * 10 * 1.3);
  });
});
