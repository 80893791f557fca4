/**
 * The bench's metric arithmetic on hand-made traces: every expected number below is worked out by hand from
 * the definitions (vLLM-Omni's), not read back from the code.
 */
import { describe, expect, it } from 'vitest';
import { distribution, percentile, requestMetrics, simulatePlayer, summarizeRun } from '../../bench/ttfp/metrics.ts';
import type { RequestTrace, TraceEvent } from '../../bench/ttfp/trace.ts';

const RATE = 24_000;
/** An audio delta of `ms` milliseconds arriving at `atMs`. */
const audio = (atMs: number, ms: number): TraceEvent => ({
  type: 'audio',
  atMs,
  samples: (ms / 1000) * RATE,
  sampleRateHz: RATE,
});
const text = (atMs: number): TraceEvent => ({ type: 'text', atMs });
const done = (atMs: number): TraceEvent => ({ type: 'done', atMs });
const trace = (startMs: number, events: TraceEvent[], ok = true): RequestTrace => ({
  startMs,
  events,
  ok,
  ...(ok ? {} : { error: 'boom' }),
});

describe('requestMetrics', () => {
  // Sent at 1000; text at +20, +30, +45, +50; audio 500 ms at +80, 500 ms at +400; done at +420.
  const t = trace(1000, [
    text(1020),
    text(1030),
    text(1045),
    audio(1080, 500),
    text(1050),
    audio(1400, 500),
    done(1420),
  ]);
  const m = requestMetrics(t);

  it('measures TTFT, TTFP and E2E from the send time', () => {
    expect(m.ttftMs).toBe(20);
    expect(m.ttfpMs).toBe(80);
    expect(m.e2eMs).toBe(420);
  });

  it('takes ITLs between consecutive text deltas and TPOT as their mean', () => {
    expect(m.itlsMs).toEqual([10, 15, 5]);
    expect(m.tpotMs).toBe(10);
    expect(m.textDeltas).toBe(4);
  });

  it('takes TPOT over the tokens the usage counts when deltas carry several', () => {
    const several = requestMetrics({ ...t, textTokens: 7 });
    expect(several.itlsMs).toEqual([10, 15, 5]);
    expect(several.tpotMs).toBe(30 / 6);
  });

  it('computes RTF as the last audio arrival over the audio duration', () => {
    expect(m.audioSeconds).toBeCloseTo(1, 12);
    expect(m.rtf).toBeCloseTo(400 / 1000, 12);
    expect(m.firstAudioMs).toBeCloseTo(500, 9); // the initial chunk, as heard
  });

  it('leaves audio metrics null for a text-only answer and TPOT null for a single delta', () => {
    const only = requestMetrics(trace(0, [text(7), done(9)]));
    expect(only).toMatchObject({
      ttftMs: 7,
      ttfpMs: null,
      rtf: null,
      tpotMs: null,
      audioSeconds: 0,
      e2eMs: 9,
      firstAudioMs: null,
    });
    expect(only.stalls).toEqual({ underruns: 0, worstStallMs: 0, totalStallMs: 0 });
  });

  it('ignores empty audio deltas', () => {
    const m2 = requestMetrics(
      trace(0, [{ type: 'audio', atMs: 5, samples: 0, sampleRateHz: RATE }, audio(30, 100), done(31)]),
    );
    expect(m2.ttfpMs).toBe(30);
  });
});

describe('simulatePlayer', () => {
  it('never stalls when every chunk arrives before the audio before it has played out', () => {
    // Plays 0..320, chunk 2 at 300 (<= 320) extends to 1320, chunk 3 at 1320 exactly: no gap.
    expect(
      simulatePlayer([
        { atMs: 0, durationMs: 320 },
        { atMs: 300, durationMs: 1000 },
        { atMs: 1320, durationMs: 10 },
      ]),
    ).toEqual({
      underruns: 0,
      worstStallMs: 0,
      totalStallMs: 0,
    });
  });

  it('counts stalls over the threshold as underruns and sums every stall', () => {
    // 0..100 plays; next at 150: stall 50 (not an underrun), plays to 250; next at 500: stall 250 (underrun), plays
    // to 600; next at 550: no stall, buffered to 700; next at 801: stall 101 (underrun).
    const s = simulatePlayer([
      { atMs: 0, durationMs: 100 },
      { atMs: 150, durationMs: 100 },
      { atMs: 500, durationMs: 100 },
      { atMs: 550, durationMs: 100 },
      { atMs: 801, durationMs: 100 },
    ]);
    expect(s).toEqual({ underruns: 2, worstStallMs: 250, totalStallMs: 50 + 250 + 101 });
  });

  it('does not count a stall of exactly the threshold', () => {
    expect(
      simulatePlayer([
        { atMs: 0, durationMs: 100 },
        { atMs: 200, durationMs: 100 },
      ]).underruns,
    ).toBe(0);
    expect(
      simulatePlayer(
        [
          { atMs: 0, durationMs: 100 },
          { atMs: 200, durationMs: 100 },
        ],
        99,
      ).underruns,
    ).toBe(1);
  });

  it('starts the player at the first chunk, so a late first chunk is TTFP, not a stall', () => {
    expect(
      simulatePlayer([
        { atMs: 5000, durationMs: 100 },
        { atMs: 5100, durationMs: 100 },
      ]).totalStallMs,
    ).toBe(0);
  });
});

describe('percentile', () => {
  it('interpolates linearly between ranks, as numpy does', () => {
    expect(percentile([4, 1, 3, 2], 50)).toBe(2.5);
    expect(percentile([1, 2, 3, 4], 0)).toBe(1);
    expect(percentile([1, 2, 3, 4], 100)).toBe(4);
    expect(percentile([10, 20], 99)).toBeCloseTo(19.9, 12);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it('does not reorder its input', () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    expect(values).toEqual([3, 1, 2]);
  });
});

describe('summarizeRun', () => {
  // Request A: 3 text deltas with gaps 10, 10; request B: 2 deltas with a gap of 40.
  const a = trace(0, [text(10), text(20), text(30), audio(50, 1000), done(60)]);
  const b = trace(100, [text(130), text(170), audio(200, 500), audio(900, 500), done(950)]);
  const failed = trace(0, [text(5)], false);
  const r = summarizeRun([a, b, failed]);

  it('counts failed requests and keeps them out of every metric', () => {
    expect(r.completed).toBe(2);
    expect(r.failed).toBe(1);
    expect(r.errors).toEqual(['boom']);
    expect(r.ttft.mean).toBe((10 + 30) / 2);
  });

  it('pools ITL over all gaps but averages TPOT per request', () => {
    expect(r.itl.mean).toBe((10 + 10 + 40) / 3); // 20
    expect(r.tpot.mean).toBe((10 + 40) / 2); // 25
  });

  it('aggregates TTFP, E2E, RTF and the player', () => {
    expect(r.ttfp.mean).toBe((50 + 100) / 2);
    expect(r.ttfp.p50).toBe(75);
    expect(r.e2e.mean).toBe((60 + 850) / 2);
    // A: 50 ms / 1 s; B: last audio at +800 over 1 s.
    expect(r.rtf.mean).toBeCloseTo((0.05 + 0.8) / 2, 12);
    // B: plays 200..700, next at 900: a 200 ms stall.
    expect(r).toMatchObject({ underruns: 1, requestsWithUnderruns: 1, worstStallMs: 200, totalStallMs: 200 });
    expect(r.audioSeconds).toBeCloseTo(2, 12);
    expect(r.firstAudio.mean).toBeCloseTo((1000 + 500) / 2, 9);
  });

  it('reports null distributions when nothing measured the metric', () => {
    expect(distribution([null, null])).toEqual({ mean: null, p50: null, p99: null });
    expect(summarizeRun([failed]).ttfp).toEqual({ mean: null, p50: null, p99: null });
  });
});
