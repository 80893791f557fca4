/** The transcription-cost comparison of `chorus bench --voice --compare-transcription` (pure parts). */
import { describe, expect, it } from 'vitest';
import type { StageGraph } from '../../src/common/graph.ts';
import type { TurnTrace } from '../../bench/voice/protocol.ts';
import {
  DEFAULT_BENCH_ASR,
  summarizeTranscriptionCost,
  transcriptionCostLines,
  withAsr,
} from '../../bench/voice/transcriptionCost.ts';

/** A voice turn whose first audio came `ttfpMs` after the end of speech. */
function turn(ttfpMs: number, transcribed = false, ok = true): TurnTrace {
  return {
    kind: 'voice',
    startMs: 1000,
    ok,
    events: [
      { type: 'audio', atMs: 1000 + ttfpMs, samples: 480, sampleRateHz: 24000 },
      { type: 'done', atMs: 1000 + ttfpMs + 500 },
    ],
    ...(transcribed ? { transcribedMs: 1000 + ttfpMs / 2 } : {}),
  };
}

describe('transcription cost', () => {
  it('compares first audio on over off, p50 and mean, leaving failed turns out and counting transcripts', () => {
    const off = [turn(100), turn(200), turn(300)];
    const on = [turn(110, true), turn(210, true), turn(320), turn(5000, true, false)];
    const row = summarizeTranscriptionCost(4, off, on);
    expect(row.off).toEqual({ p50: 200, mean: 200, completed: 3 });
    expect(row.on).toEqual({ p50: 210, mean: 640 / 3, completed: 3 });
    expect(row.ratio_p50).toBeCloseTo(1.05, 10);
    expect(row.ratio_mean).toBeCloseTo(640 / 600, 10);
    expect(row.transcribed).toBe(3);
    expect(transcriptionCostLines([row])[0]).toMatch(/^c=4: first audio off 200 p50 .* on\/off 1\.050x p50/);
  });

  it('gives a pipeline without speech-to-text the default one, and keeps a pipeline its own', () => {
    const graph = { asr: null } as unknown as StageGraph;
    expect(withAsr(graph).asr).toEqual(DEFAULT_BENCH_ASR);
    const own = { asr: { model: { path: '/m' }, threads: 2 } } as unknown as StageGraph;
    expect(withAsr(own)).toBe(own);
  });
});
