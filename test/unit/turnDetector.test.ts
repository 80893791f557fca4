/** TurnDetector as a pure function over per-window speech probabilities: no model, no clock. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_TURN_PARAMS,
  detectTurns,
  SIGNAL_SEARCH_WINDOWS,
  TurnDetector,
  type TurnParams,
} from '../../src/voice/TurnDetector.ts';

const W = 32; // ms per window, Silero's at 16 kHz
const params = (over: Partial<TurnParams> = {}): TurnParams => ({ ...DEFAULT_TURN_PARAMS, ...over });
/** n windows of probability p. */
const run = (n: number, p: number): number[] => Array<number>(n).fill(p);

describe('TurnDetector', () => {
  it('starts on the first window at the threshold, padded back by prefix_padding_ms', () => {
    const probs = [...run(20, 0.1), 0.5, ...run(5, 0.9)];
    expect(detectTurns(probs, params(), W)).toEqual([{ type: 'speech_started', audioStartMs: 20 * W - 300 }]);
    expect(detectTurns([...run(20, 0.1), 0.49], params(), W)).toEqual([]);
  });

  it('clamps audio_start_ms at the start of the timeline', () => {
    expect(detectTurns([0.1, 0.1, 0.9], params(), W)).toEqual([{ type: 'speech_started', audioStartMs: 0 }]);
  });

  it('stops after silence_duration_ms below threshold - 0.15, reporting where speech ended', () => {
    // 16 windows (512 ms) of silence >= 500 ms: the stop fires on the 16th.
    const probs = [...run(10, 0.05), ...run(30, 0.95), ...run(15, 0.05)];
    expect(detectTurns(probs, params(), W).map((e) => e.type)).toEqual(['speech_started']);
    const events = detectTurns([...probs, 0.05], params(), W);
    expect(events).toEqual([
      { type: 'speech_started', audioStartMs: 10 * W - 300 },
      { type: 'speech_stopped', audioEndMs: 40 * W, clipEndMs: 41 * W },
    ]);
  });

  it('hysteresis: windows in [threshold - 0.15, threshold) neither end speech nor cancel a silence run', () => {
    // Speaking, then 40 windows at 0.4 (>= 0.35): still speaking, no silence run opened.
    const held = [...run(5, 0.9), ...run(40, 0.4)];
    expect(detectTurns(held, params(), W).map((e) => e.type)).toEqual(['speech_started']);
    // A silence run opened at 0.1 goes on through 0.4s and ends the turn where it opened.
    const probs = [...run(5, 0.9), ...run(4, 0.1), ...run(12, 0.4)];
    expect(detectTurns(probs, params(), W)).toEqual([
      { type: 'speech_started', audioStartMs: 0 },
      { type: 'speech_stopped', audioEndMs: 5 * W, clipEndMs: 6 * W },
    ]);
  });

  it('a window at the threshold cancels the silence run: one turn across a short pause', () => {
    const pause = (n: number) => [...run(10, 0.9), ...run(n, 0.05), ...run(10, 0.9), ...run(20, 0.05)];
    const short = detectTurns(pause(10), params({ silenceDurationMs: 500 }), W); // 320 ms pause
    expect(short.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped']);
    const long = detectTurns(pause(20), params({ silenceDurationMs: 500 }), W); // 640 ms pause
    expect(long.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped', 'speech_started', 'speech_stopped']);
  });

  it('honours threshold and silence_duration_ms as given', () => {
    const probs = [...run(3, 0.65), ...run(3, 0.1)];
    expect(detectTurns(probs, params({ threshold: 0.7 }), W)).toEqual([]);
    expect(detectTurns(probs, params({ threshold: 0.6, silenceDurationMs: 64, prefixPaddingMs: 0 }), W)).toEqual([
      { type: 'speech_started', audioStartMs: 0 },
      { type: 'speech_stopped', audioEndMs: 3 * W, clipEndMs: 4 * W },
    ]);
  });

  it('fires idle_timeout after idle_timeout_ms of audio with no speech since the last turn, and re-arms', () => {
    const p = params({ silenceDurationMs: 96, idleTimeoutMs: 320 });
    // Stop fires at the end of window 8 (3 silent windows after 5 speech): 256 ms. Idle from there: 576, 896.
    const events = detectTurns([...run(5, 0.9), ...run(3, 0.1), ...run(20, 0.1)], p, W);
    expect(events).toEqual([
      { type: 'speech_started', audioStartMs: 0 },
      { type: 'speech_stopped', audioEndMs: 160, clipEndMs: 192 },
      { type: 'idle_timeout', audioStartMs: 256, audioEndMs: 576 },
      { type: 'idle_timeout', audioStartMs: 576, audioEndMs: 896 },
    ]);
    // Off by default, and never before the first turn.
    expect(detectTurns([...run(5, 0.9), ...run(30, 0.1)], params({ silenceDurationMs: 96 }), W)).toHaveLength(2);
    expect(detectTurns(run(100, 0.1), params({ idleTimeoutMs: 100 }), W)).toEqual([]);
  });

  it('speech disarms idle_timeout', () => {
    const p = params({ silenceDurationMs: 96, idleTimeoutMs: 320 });
    const events = detectTurns([...run(5, 0.9), ...run(3, 0.1), ...run(5, 0.1), ...run(3, 0.9)], p, W);
    expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped', 'speech_started']);
  });

  it('update() applies from the next window; reset() forgets the turn and moves the origin', () => {
    const d = new TurnDetector(params(), W);
    expect(d.push(0.6)).toEqual([{ type: 'speech_started', audioStartMs: 0 }]);
    d.update(params({ silenceDurationMs: 32 }));
    expect(d.push(0.1)).toEqual([
      { type: 'silence_started', audioEndMs: 32, clipEndMs: 64 },
      { type: 'speech_stopped', audioEndMs: 32, clipEndMs: 64 },
    ]);
    d.update(params({ threshold: 0.8, prefixPaddingMs: 100 }));
    expect(d.push(0.7)).toEqual([]);
    d.push(0.9);
    d.reset(1000); // a clear mid-turn: no stop for the forgotten turn, and the next window starts at 1000 ms
    expect(d.speaking).toBe(false);
    expect(d.push(0.1)).toEqual([]);
    expect(d.push(0.9)).toEqual([{ type: 'speech_started', audioStartMs: 1000 }]); // padding stops at the reset
    expect(d.positionMs).toBe(1000 + 2 * W);
  });

  it('rebase() keeps the turn and counts the gap as silence', () => {
    const d = new TurnDetector(params({ silenceDurationMs: 200 }), W);
    d.push(0.9);
    d.push(0.1); // silence from 32 ms
    d.rebase(500); // audio from 64 to 500 ms lost
    expect(d.push(0.1)).toEqual([{ type: 'speech_stopped', audioEndMs: 32, clipEndMs: 64 }]);
  });

  it('dates the silence back to where the probability fell, and by the model lag, never before the speech', () => {
    // Silero's shape at the end of a phrase: the first window after it still ~0.95, then 0.4 (hysteresis band),
    // then silence. With a one-window model lag the speech ended where the 0.95 window starts (window 15).
    const probs = [...run(5, 0.05), ...run(10, 1), 0.95, 0.4, ...run(20, 0.05)];
    const p = params({ prefixPaddingMs: 0 });
    expect(detectTurns(probs, p, W)[1]).toEqual({ type: 'speech_stopped', audioEndMs: 16 * W, clipEndMs: 18 * W });
    expect(detectTurns(probs, p, W, { speechEndLagMs: W })[1]).toEqual({
      type: 'speech_stopped',
      audioEndMs: 15 * W,
      clipEndMs: 17 * W,
    });
    // The stop fires once 500 ms have passed since that point: 2 windows sooner than counting from window 17.
    const at = (lag: number) => {
      const d = new TurnDetector(p, W, 0, lag);
      return probs.findIndex((x) => d.push(x).some((e) => e.type === 'speech_stopped'));
    };
    expect(at(0)).toBe(31);
    expect(at(W)).toBe(30);
    // One window of speech: the silence starts no earlier than the speech did.
    const blip = detectTurns([0.05, 1, 0.05, ...run(20, 0.05)], p, W, { speechEndLagMs: 3 * W });
    expect(blip[1]).toEqual({ type: 'speech_stopped', audioEndMs: W, clipEndMs: 3 * W });
  });

  it("dates the end by the signal's activity where the windows carry it: the last active sub-frame", () => {
    const p = params({ prefixPaddingMs: 0, silenceDurationMs: 320 });
    // Speech windows 0-9, Silero still high on 10-11 (its lag), falling at 12; the signal ends 12 ms into window 9.
    const probs = [...run(12, 0.95), ...run(14, 0.05)];
    const activity = [...run(9, 32), 12, ...run(16, 0)];
    const d = new TurnDetector(p, W, 0, W);
    const events = probs.flatMap((x, k) => d.push(x, activity[k]));
    const end = 9 * W + 12;
    expect(events).toEqual([
      { type: 'speech_started', audioStartMs: 0 },
      { type: 'silence_started', audioEndMs: end, clipEndMs: end + 64 },
      { type: 'speech_stopped', audioEndMs: end, clipEndMs: end + 64 },
    ]);
    // By the model alone (activity unknown) the same windows put the end at window 11: 52 ms later.
    expect(detectTurns(probs, p, W, { speechEndLagMs: W })[1]).toMatchObject({ audioEndMs: 11 * W });
    // The clock ends the turn silenceDurationMs after the signal's end.
    const clocked = new TurnDetector(p, W, 0, W);
    probs.slice(0, 19).forEach((x, k) => clocked.push(x, activity[k])); // rated up to 608 ms
    expect(clocked.advance(end + 319)).toEqual([]);
    expect(clocked.advance(end + 320).map((e) => e.type)).toEqual(['speech_stopped']);
  });

  it('signal dating: searches SIGNAL_SEARCH_WINDOWS before the fall, falls back to the model lag when unknown', () => {
    const p = params({ prefixPaddingMs: 0 });
    const stopAt = (activity: Array<number | undefined>, probs = [...run(14, 0.95), ...run(20, 0.05)]) => {
      const d = new TurnDetector(p, W, 0, W);
      return probs.flatMap((x, k) => d.push(x, activity[k])).find((e) => e.type === 'speech_stopped');
    };
    // Nothing active in the windows searched (the speech ended before them): the earliest of them.
    expect(stopAt([...run(4, 32), ...run(30, 0)])).toMatchObject({ audioEndMs: (14 - SIGNAL_SEARCH_WINDOWS) * W });
    // Active in the window just before the fall, to its end: the end is the fall.
    expect(stopAt([...run(14, 32), ...run(20, 0)])).toMatchObject({ audioEndMs: 14 * W });
    // Activity inside the fall window does not count (Silero judged it not speech).
    expect(stopAt([...run(10, 32), 0, 0, 0, 0, 20, ...run(19, 0)])).toMatchObject({ audioEndMs: 10 * W });
    // One window in the search unknown (no noise floor yet): the model's lag decides.
    expect(stopAt([...run(12, 32), undefined, 0, ...run(20, 0)])).toMatchObject({ audioEndMs: 13 * W });
    // Never before the speech began.
    expect(stopAt([0, 0, 0, 0, ...run(30, 0)], [...run(4, 0.05), 0.95, ...run(20, 0.05)])).toMatchObject({
      audioEndMs: 4 * W,
    });
  });

  it('tentative events: silence_started when a silence run opens, silence_cancelled when speech resumes', () => {
    const p = params({ prefixPaddingMs: 0, silenceDurationMs: 320 });
    const probs = [...run(5, 1), ...run(4, 0.05), ...run(3, 1), ...run(12, 0.05)];
    expect(detectTurns(probs, p, W, { speechEndLagMs: W, tentative: true })).toEqual([
      { type: 'speech_started', audioStartMs: 0 },
      { type: 'silence_started', audioEndMs: 4 * W, clipEndMs: 6 * W },
      { type: 'silence_cancelled' },
      { type: 'silence_started', audioEndMs: 11 * W, clipEndMs: 13 * W },
      { type: 'speech_stopped', audioEndMs: 11 * W, clipEndMs: 13 * W },
    ]);
  });

  it('the audio clock ends the turn silence_duration_ms after the speech, the window in progress unrated', () => {
    const p = params({ prefixPaddingMs: 0 });
    const d = new TurnDetector(p, W);
    const feed = (probs: number[]) => probs.flatMap((x) => d.push(x).filter((e) => e.type !== 'silence_started'));
    expect(feed([...run(5, 1), ...run(15, 0.05)])).toEqual([{ type: 'speech_started', audioStartMs: 0 }]);
    // Silence from 160 ms; rated up to 640 (480 ms of it). The clock at 659 is not there yet; at 660 it is.
    expect(d.advance(659)).toEqual([]);
    expect(d.advance(660)).toEqual([{ type: 'speech_stopped', audioEndMs: 160, clipEndMs: 192 }]);
    expect(feed([0.05, 0.05])).toEqual([]); // the windows rated later change nothing

    // The model a window or more behind the clock: its windows decide, as soon as they are in.
    const late = new TurnDetector(p, W);
    [...run(5, 1), ...run(14, 0.05)].forEach((x) => late.push(x)); // rated up to 608
    expect(late.advance(670)).toEqual([]); // 62 ms unrated
    expect(late.push(0.05).filter((e) => e.type === 'speech_stopped')).toEqual([
      { type: 'speech_stopped', audioEndMs: 160, clipEndMs: 192 },
    ]); // rated up to 640: within a window of the clock (670), which is past 660
    // At most one window unrated: rated up to 640, the clock at 672 (the window 640-672 complete but not rated).
    const whole = new TurnDetector(p, W);
    [...run(5, 1), ...run(15, 0.05)].forEach((x) => whole.push(x));
    expect(whole.advance(672).map((e) => e.type)).toEqual(['speech_stopped']);
    const behind = new TurnDetector(p, W);
    [...run(5, 1), ...run(15, 0.05)].forEach((x) => behind.push(x));
    expect(behind.advance(673)).toEqual([]);
    // Speech in the rated windows cancels the run: the clock alone never ends a turn.
    const resumed = new TurnDetector(p, W);
    [...run(5, 1), ...run(14, 0.05), 1].forEach((x) => resumed.push(x));
    expect(resumed.advance(660)).toEqual([]);
  });

  it('rejects out-of-range params before changing anything', () => {
    expect(() => new TurnDetector(params({ threshold: 1.5 }), W)).toThrow(/threshold must be in 0..1/);
    const d = new TurnDetector(params(), W);
    expect(() => d.update(params({ silenceDurationMs: -1 }))).toThrow(/silenceDurationMs/);
    expect(() => d.update(params({ idleTimeoutMs: Number.NaN }))).toThrow(/idleTimeoutMs/);
    expect(d.params).toEqual(params());
  });
});
