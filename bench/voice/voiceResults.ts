/**
 * The shape of the voice bench's results.json and the pure arithmetic from turn traces to it: per concurrency, the
 * time from the end of speech to the first audio of the answer (as heard, and without the silence the VAD must wait
 * out), when speech_stopped came, the same sentence typed, and their ratio; and the goal at c=1.
 */
import type { LimitResult } from '../limit/limitResult.ts';
import { percentile, requestMetrics } from '../ttfp/metrics.ts';
import { goalOf, type Goal, type Machine } from '../ttfp/results.ts';
import type { ServerSideTiming } from '../ttfp/ServerTimings.ts';
import type { TurnTrace } from './protocol.ts';

/** Voice TTFP without the silence (the VAD's wait) may be at most this many times the typed sentence's TTFP. */
export const VOICE_OVER_TEXT_GOAL_AT_C1 = 1.2;

export interface Spread {
  readonly p50: number | null;
  readonly p90: number | null;
}

export interface VoiceRunRow {
  readonly concurrency: number;
  readonly num_prompts: number;
  readonly voice_completed: number;
  readonly voice_failed: number;
  readonly text_completed: number;
  readonly text_failed: number;
  /** Last speech sample sent -> first response.output_audio.delta (client clock). */
  readonly voice_ttfp_ms: Spread;
  /** The same minus silence_duration_ms: what the pipeline adds after the VAD may end the turn. */
  readonly voice_ttfp_minus_silence_ms: Spread;
  /** Last speech sample sent -> input_audio_buffer.speech_stopped. */
  readonly speech_stopped_ms: Spread;
  /**
   * Where the server's VAD put the end of speech (audio_end_ms) after where the signal ends, in audio time: Silero's
   * probability decays over a few 32 ms windows after the last phoneme.
   */
  readonly vad_end_lag_ms: Spread;
  /** speech_stopped -> first audio delta. */
  readonly stopped_to_audio_ms: Spread;
  /** conversation.item.create of the same sentence -> first audio delta. */
  readonly text_ttfp_ms: Spread;
  /** voice_ttfp_minus_silence over text_ttfp, p50 over p50 and p90 over p90. */
  readonly voice_over_text: Spread;
  /** In-process server: generate() -> first audio in main, so without the VAD and the sockets. */
  readonly engine_ttfp_ms: { readonly voice: Spread; readonly text: Spread };
  /** Mean prompt tokens the server counted: the audio's rows in voice turns, the sentence's tokens in text turns. */
  readonly prompt_tokens: { readonly voice: number | null; readonly text: number | null };
  /** Mean length of the utterances (speech only). */
  readonly speech_ms: number | null;
  /** In-process server: the p99 of its event-loop delay while the voice turns ran (5 ms resolution, included). */
  readonly event_loop_delay_p99_ms: number | null;
  readonly voice_duration_s: number;
  readonly text_duration_s: number;
  readonly errors: readonly string[];
}

/** Where the time of a c=1 voice turn goes, beside the text turn's (medians, ms). */
export interface VoiceBreakdown {
  readonly silence_duration_ms: number;
  readonly speech_stopped_ms: number | null;
  readonly vad_end_lag_ms: number | null;
  readonly stopped_to_audio_ms: number | null;
  readonly text_ttfp_ms: number | null;
  readonly engine_ttfp_ms: { readonly voice: number | null; readonly text: number | null };
  readonly prompt_tokens: { readonly voice: number | null; readonly text: number | null };
  /**
   * Measured alone on the runners after the runs (--config only, null with --url or --skip-limit): the utterance
   * as committed (speech and the silence before speech_stopped) through the audio front end (pcm16 -> 16 kHz ->
   * log-mel) and the audio encoder.
   */
  readonly encode: {
    readonly audio_ms: number;
    readonly rows: number;
    readonly front_end_ms: number;
    readonly encoder_ms: number;
  } | null;
  /** The first-packet limit of a prompt as long as the voice turn's, and of one as long as the text turn's. */
  readonly limit_voice: LimitResult | null;
  readonly limit_text: LimitResult | null;
}

export interface VoiceBenchResult {
  readonly tool: 'chorus bench --voice';
  readonly started_at: string;
  finished_at: string;
  readonly command: string;
  readonly git_sha: string;
  readonly machine: Machine;
  readonly target: { readonly kind: 'config' | 'url'; readonly file?: string; readonly url?: string };
  readonly config_sha256: string | null;
  readonly options: {
    readonly concurrency: readonly number[];
    readonly num_prompts: number;
    readonly output_len: number;
    readonly silence_duration_ms: number;
    readonly warmup: number;
    readonly seed: number;
  };
  readonly runs: VoiceRunRow[];
  breakdown: VoiceBreakdown | null;
  goals: Goal[];
  /** Why the goal is missed, when it is: the work a voice turn still does after the user stops speaking. */
  goal_note: string | null;
}

function spread(values: readonly (number | null | undefined)[]): Spread {
  const present = values.filter((v): v is number => v != null && Number.isFinite(v));
  if (present.length === 0) return { p50: null, p90: null };
  return { p50: percentile(present, 50), p90: percentile(present, 90) };
}

function mean(values: readonly (number | undefined)[]): number | null {
  const present = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  return present.length === 0 ? null : present.reduce((a, b) => a + b, 0) / present.length;
}

const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);

export interface VoiceRunInput {
  readonly concurrency: number;
  readonly silenceMs: number;
  readonly voice: { readonly traces: readonly TurnTrace[]; readonly durationMs: number };
  readonly text: { readonly traces: readonly TurnTrace[]; readonly durationMs: number };
  /** Server-side timings by response id (in-process server only). */
  readonly serverTiming?: (requestId: string | undefined) => ServerSideTiming | undefined;
  /** In-process server: p99 of its event-loop delay during the voice turns. */
  readonly eventLoopDelayP99Ms?: number | null;
}

export function summarizeVoiceRun(x: VoiceRunInput): VoiceRunRow {
  const voice = x.voice.traces.filter((t) => t.ok);
  const text = x.text.traces.filter((t) => t.ok);
  const ttfp = (t: TurnTrace) => requestMetrics(t).ttfpMs;
  const voiceTtfp = voice.map(ttfp);
  const textTtfp = spread(text.map(ttfp));
  const minusSilence = spread(voiceTtfp.map((v) => (v === null ? null : v - x.silenceMs)));
  const engine = (list: readonly TurnTrace[]) => spread(list.map((t) => x.serverTiming?.(t.requestId)?.engineTtfpMs));
  const firstAudio = (t: TurnTrace) => t.events.find((e) => e.type === 'audio')?.atMs;
  return {
    concurrency: x.concurrency,
    num_prompts: x.voice.traces.length,
    voice_completed: voice.length,
    voice_failed: x.voice.traces.length - voice.length,
    text_completed: text.length,
    text_failed: x.text.traces.length - text.length,
    voice_ttfp_ms: spread(voiceTtfp),
    voice_ttfp_minus_silence_ms: minusSilence,
    speech_stopped_ms: spread(voice.map((t) => (t.speechStoppedMs ?? NaN) - t.startMs)),
    vad_end_lag_ms: spread(voice.map((t) => (t.vadAudioEndMs ?? NaN) - (t.speechEndAudioMs ?? NaN))),
    stopped_to_audio_ms: spread(voice.map((t) => (firstAudio(t) ?? NaN) - (t.speechStoppedMs ?? NaN))),
    text_ttfp_ms: textTtfp,
    voice_over_text: { p50: ratio(minusSilence.p50, textTtfp.p50), p90: ratio(minusSilence.p90, textTtfp.p90) },
    engine_ttfp_ms: { voice: engine(voice), text: engine(text) },
    prompt_tokens: { voice: mean(voice.map((t) => t.promptTokens)), text: mean(text.map((t) => t.promptTokens)) },
    speech_ms: mean(voice.map((t) => t.speechMs)),
    event_loop_delay_p99_ms: x.eventLoopDelayP99Ms ?? null,
    voice_duration_s: x.voice.durationMs / 1000,
    text_duration_s: x.text.durationMs / 1000,
    errors: [
      ...new Set([...x.voice.traces, ...x.text.traces].filter((t) => !t.ok).map((t) => `${t.kind}: ${t.error}`)),
    ],
  };
}

/** The goal at c=1 (p50), and when it is missed, where the time goes (from the c=1 row and the breakdown). */
export function evaluateVoiceGoal(r: VoiceBenchResult): { goals: Goal[]; note: string | null } {
  const row = r.runs.find((x) => x.concurrency === 1);
  const c1 = row?.voice_over_text.p50 ?? null;
  if (!row || c1 === null) return { goals: [], note: null };
  const goal = goalOf(
    'voice TTFP minus silence_duration_ms / text TTFP at c=1 (p50)',
    c1,
    '<=',
    VOICE_OVER_TEXT_GOAL_AT_C1,
  );
  if (goal.met) return { goals: [goal], note: null };
  const silence = r.options.silence_duration_ms;
  const text = row.text_ttfp_ms.p50;
  const parts: string[] = [];
  const stopped = row.speech_stopped_ms.p50;
  const lag = row.vad_end_lag_ms.p50;
  const vadMs = stopped === null ? null : stopped - silence;
  if (vadMs !== null && lag !== null)
    parts.push(
      `the VAD takes ${fixed(vadMs)} ms past the silence (it puts the end of speech ${fixed(lag)} ms after the ` +
        `signal ends, and speech_stopped arrives ${fixed(vadMs - lag)} ms after that end plus the silence)`,
    );
  const work: string[] = [];
  const b = r.breakdown;
  if (b?.encode) work.push(`encode of the utterance ${fixed(b.encode.front_end_ms + b.encode.encoder_ms)} ms`);
  if (b?.limit_voice && b.limit_text) {
    const prefill = (l: LimitResult) => l.median.thinker_prefill_ms + l.median.talker_prefill_ms;
    work.push(
      `prefill of its ${b.limit_voice.prompt_tokens} rows ${fixed(prefill(b.limit_voice))} ms against ` +
        `${fixed(prefill(b.limit_text))} ms for the typed sentence's ${b.limit_text.prompt_tokens} tokens`,
    );
  }
  parts.push(
    `the answer ${fixed(row.stopped_to_audio_ms.p50)} ms from speech_stopped against the typed sentence's ` +
      `${fixed(text)} ms TTFP` +
      (work.length > 0 ? ` (alone on the runners: ${work.join('; ')})` : ''),
  );
  // With the answer held from the first silence, what is left after speech_stopped is small: the VAD's share is
  // what the goal would still be without any.
  const bound = vadMs !== null && text !== null && text > 0 ? vadMs / text : null;
  const note =
    `Missed: of the voice TTFP minus silence (${fixed(row.voice_ttfp_minus_silence_ms.p50)} ms), ` +
    `${parts.join(', and ')}. The Thinker prefills the turn while the user speaks, and the answer starts, held in ` +
    'the server, when the VAD first hears the silence, so at speech_stopped its first audio is usually ready.' +
    (bound === null
      ? ''
      : ` The VAD's ${fixed(vadMs)} ms past the silence alone give ${bound.toFixed(1)}x: its 32 ms windows (where ` +
        'the silence is dated from, when it is confirmed) and the 20 ms appends the audio arrives in.');
  return { goals: [goal], note };
}

const fixed = (v: number | null) => (v === null ? '-' : v >= 100 ? v.toFixed(0) : v.toFixed(1));
