/**
 * `chorus bench --voice --turns`: the shape of its results.json and the pure arithmetic from spoken conversations'
 * traces to it. Per turn index, over the conversations: the time from the end of speech to the first audio (as the
 * single-turn voice bench measures it, and the part of it after speech_stopped), the input and cached tokens the
 * server reported, failures, and turn k over turn 1; with two servers their ratio; the goal at c=1. No clock, no I/O.
 */
import { percentile, requestMetrics } from '../../ttfp/metrics.ts';
import { goalOf, type Goal, type ResultHeader } from '../../ttfp/results.ts';
import type { TurnTrace } from '../protocol.ts';
import {
  byTurn,
  meanOf,
  ratio,
  ratiosByTurn,
  type ByTurnRatio,
  type ConversationsRun,
  type TurnUsage,
} from '../../ttfp/turns/byTurn.ts';

/** Issue 27: time from the end of speech to the first audio at the last turn (20) <= this x turn 1's, c=1 (p50s). */
export const VOICE_TURN_N_OVER_TURN1_GOAL = 1.5;

export interface Spread {
  readonly p50: number | null;
  readonly p90: number | null;
}

/** One turn index (1 = each conversation's first turn) over a run's conversations. */
export interface VoiceTurnRow extends TurnUsage {
  /** The send of the last speech sample -> the first response.output_audio.delta (client clock). */
  readonly voice_ttfp_ms: Spread;
  /** The last speech sample -> input_audio_buffer.speech_stopped (silence_duration_ms and the VAD's lag). */
  readonly speech_stopped_ms: Spread;
  /** speech_stopped -> the first audio delta: what the pipeline adds once the VAD has ended the turn. */
  readonly stopped_to_audio_ms: Spread;
  /** The VAD's audio_end_ms minus where the speech ends in the audio sent (audio time). */
  readonly vad_end_lag_ms: Spread;
  /** This turn's p50 over turn 1's. */
  readonly voice_ttfp_over_turn1: number | null;
  readonly stopped_to_audio_over_turn1: number | null;
}

export interface VoiceTurnsRun extends ConversationsRun<VoiceTurnRow> {
  /** Mean length of the utterances (speech only). */
  readonly speech_ms: number | null;
}

/** The first server's p50s over the second's by turn index, at one concurrency (below 1: the first is faster). */
export type VoiceTurnsRatio = ByTurnRatio<{
  readonly voice_ttfp: number | null;
  readonly stopped_to_audio: number | null;
}>;

/** The provenance (ResultHeader: when, commit, machine, target, config hashes), then the run. */
export interface VoiceTurnsResult extends ResultHeader {
  readonly tool: 'chorus bench --voice --turns';
  readonly options: {
    readonly concurrency: readonly number[];
    readonly turns: number;
    /** Conversations per concurrency; null: twice the concurrency. */
    readonly conversations: number | null;
    /** max_output_tokens of every answer, with ignore_eos. */
    readonly output_len: number;
    readonly silence_duration_ms: number;
    readonly warmup: number;
    readonly seed: number;
    /** Both servers up, each concurrency's conversations in halves A B B A. */
    readonly interleaved: boolean;
  };
  readonly runs: VoiceTurnsRun[];
  ratios: VoiceTurnsRatio[];
  goals: Goal[];
}

function spread(values: readonly (number | null | undefined)[]): Spread {
  const present = values.filter((v): v is number => v != null && Number.isFinite(v));
  if (present.length === 0) return { p50: null, p90: null };
  return { p50: percentile(present, 50), p90: percentile(present, 90) };
}

const firstAudioMs = (t: TurnTrace): number | undefined => t.events.find((e) => e.type === 'audio')?.atMs;

/** Rows by turn index from [conversation][turn] traces (conversations may have fewer turns than others). */
export function voiceTurnRows(traces: readonly (readonly TurnTrace[])[]): VoiceTurnRow[] {
  return byTurn(traces, (ok, usage, turn1?: VoiceTurnRow): VoiceTurnRow => {
    const ttfp = spread(ok.map((x) => requestMetrics(x).ttfpMs));
    const afterStop = spread(ok.map((x) => (firstAudioMs(x) ?? NaN) - (x.speechStoppedMs ?? NaN)));
    return {
      ...usage,
      voice_ttfp_ms: ttfp,
      speech_stopped_ms: spread(ok.map((x) => (x.speechStoppedMs ?? NaN) - x.startMs)),
      stopped_to_audio_ms: afterStop,
      vad_end_lag_ms: spread(ok.map((x) => (x.vadAudioEndMs ?? NaN) - (x.speechEndAudioMs ?? NaN))),
      voice_ttfp_over_turn1: ratio(ttfp.p50, (turn1?.voice_ttfp_ms ?? ttfp).p50),
      stopped_to_audio_over_turn1: ratio(afterStop.p50, (turn1?.stopped_to_audio_ms ?? afterStop).p50),
    };
  });
}

export interface VoiceTurnsRunInput {
  readonly variant: string;
  readonly concurrency: number;
  readonly turnsPerConversation: number;
  /** [conversation][turn] */
  readonly traces: readonly (readonly TurnTrace[])[];
  readonly durationMs: number;
  readonly blocks: number;
}

export function summarizeVoiceTurnsRun(x: VoiceTurnsRunInput): VoiceTurnsRun {
  const all = x.traces.flat();
  const completed = all.filter((t) => t.ok);
  return {
    variant: x.variant,
    concurrency: x.concurrency,
    conversations: x.traces.length,
    turns_per_conversation: x.turnsPerConversation,
    completed: completed.length,
    failed: all.length - completed.length,
    duration_s: x.durationMs / 1000,
    blocks: x.blocks,
    speech_ms: meanOf(completed.filter((t) => t.speechMs !== undefined).map((t) => t.speechMs!)),
    turns: voiceTurnRows(x.traces),
  };
}

/** `variant`'s p50s over `over`'s by turn index, at every concurrency both ran. */
export function voiceTurnsRatios(runs: readonly VoiceTurnsRun[], variant: string, over: string): VoiceTurnsRatio[] {
  return ratiosByTurn(runs, variant, over, (x, y) => ({
    voice_ttfp: ratio(x.voice_ttfp_ms.p50, y.voice_ttfp_ms.p50),
    stopped_to_audio: ratio(x.stopped_to_audio_ms.p50, y.stopped_to_audio_ms.p50),
  }));
}

/**
 * Issue 27's voice goal for each server at c=1: the end of speech -> first audio p50 at the last turn over turn 1's.
 * None for a run of one turn (nothing to compare) or when either p50 is missing (every such turn failed).
 */
export function voiceTurnsGoals(runs: readonly VoiceTurnsRun[]): Goal[] {
  const several = new Set(runs.map((r) => r.variant)).size > 1;
  return runs.flatMap((run) => {
    const last = run.turns.at(-1);
    if (run.concurrency !== 1 || !last || last.turn < 2 || last.voice_ttfp_over_turn1 === null) return [];
    const name =
      `voice TTFP (end of speech -> first audio) at turn ${last.turn} / turn 1 at c=1 (p50)` +
      (several ? `, ${run.variant}` : '');
    return [goalOf(name, last.voice_ttfp_over_turn1, '<=', VOICE_TURN_N_OVER_TURN1_GOAL)];
  });
}
