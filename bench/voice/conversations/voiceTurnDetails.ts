/**
 * DIR/turns.json of `chorus bench --voice --turns`: every turn of every conversation, what was said, its outcome, its
 * times and usage, for finding the slow or failed turn behind a p50.
 */
import { requestMetrics } from '../../ttfp/metrics.ts';
import type { TurnSpec, TurnTrace } from '../protocol.ts';
import type { VoiceTurnsRun } from './voiceTurnsResult.ts';

export interface VoiceTurnDetail {
  readonly variant: string;
  readonly concurrency: number;
  readonly conversation: number;
  readonly turn: number;
  readonly sentence: string;
  readonly ok: boolean;
  readonly error: string | null;
  readonly request_id: string | null;
  /** End of speech -> first audio, -> speech_stopped, speech_stopped -> first audio (ms). */
  readonly voice_ttfp_ms: number | null;
  readonly speech_stopped_ms: number | null;
  readonly stopped_to_audio_ms: number | null;
  readonly e2e_ms: number;
  readonly input_tokens: number | null;
  readonly cached_tokens: number | null;
}

/** One record per turn of a run's conversations. */
export function voiceTurnDetails(
  run: VoiceTurnsRun,
  traces: readonly (readonly TurnTrace[])[],
  spoken: readonly (readonly TurnSpec[])[],
): VoiceTurnDetail[] {
  return traces.flatMap((conversation, c) =>
    conversation.map((t, i) => {
      const m = requestMetrics(t);
      const stopped = t.speechStoppedMs === undefined ? null : t.speechStoppedMs - t.startMs;
      return {
        variant: run.variant,
        concurrency: run.concurrency,
        conversation: c,
        turn: i + 1,
        sentence: spoken[c]?.[i]?.text ?? '',
        ok: t.ok,
        error: t.error ?? null,
        request_id: t.requestId ?? null,
        voice_ttfp_ms: m.ttfpMs,
        speech_stopped_ms: stopped,
        stopped_to_audio_ms: m.ttfpMs === null || stopped === null ? null : m.ttfpMs - stopped,
        e2e_ms: m.e2eMs,
        input_tokens: t.promptTokens ?? null,
        cached_tokens: t.cachedTokens ?? null,
      };
    }),
  );
}
