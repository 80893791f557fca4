/**
 * DIR/turns.json of `chorus bench --turns`: every turn of every conversation, its outcome, TTFT, TTFP, E2E and usage,
 * for finding the slow or failed one behind a p50.
 */
import { requestMetrics } from '../metrics.ts';
import type { RequestTrace } from '../trace.ts';
import type { TurnsRun } from './turnsResult.ts';

export interface TurnDetail {
  readonly variant: string;
  readonly concurrency: number;
  readonly conversation: number;
  readonly turn: number;
  readonly ok: boolean;
  readonly error: string | null;
  readonly request_id: string | null;
  readonly ttft_ms: number | null;
  readonly ttfp_ms: number | null;
  readonly e2e_ms: number;
  readonly input_tokens: number | null;
  readonly cached_tokens: number | null;
}

/** One record per turn of a run's conversations. */
export function turnDetails(run: TurnsRun, traces: readonly (readonly RequestTrace[])[]): TurnDetail[] {
  return traces.flatMap((conversation, c) =>
    conversation.map((t, i) => {
      const m = requestMetrics(t);
      return {
        variant: run.variant,
        concurrency: run.concurrency,
        conversation: c,
        turn: i + 1,
        ok: t.ok,
        error: t.error ?? null,
        request_id: t.requestId ?? null,
        ttft_ms: m.ttftMs,
        ttfp_ms: m.ttfpMs,
        e2e_ms: m.e2eMs,
        input_tokens: t.promptTokens ?? null,
        cached_tokens: t.cachedTokens ?? null,
      };
    }),
  );
}
