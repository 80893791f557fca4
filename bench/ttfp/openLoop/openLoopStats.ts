/**
 * What one offered rate measured, from its request records: offered and admitted req/s, refusals (the server's
 * 429: HTTP 429 on chat and at a Realtime session's upgrade, a `rate_limit_exceeded` error event on a Realtime
 * response.create) and how fast they came, TTFT / TTFP percentiles of the admitted requests, underruns (the closed
 * loop's player, metrics.ts), and goodput: admitted requests per second that completed, met the TTFP SLO (if one
 * is set) and never underran.
 *
 * Rates are over the arrival window (--duration, or the span of the arrivals with --num-prompts), so offered,
 * admitted and goodput are in the same unit and goodput <= admitted <= offered; the run's wall time (the window
 * plus the drain of the last answers) is reported beside them. Pure functions: no clock, no I/O.
 */
import { percentile, requestMetrics } from '../metrics.ts';
import type { RequestTrace } from '../trace.ts';

/** One open-loop request: when it was due, when it left (the trace's startMs) and when its outcome came. */
export interface OpenLoopRecord {
  /** Its arrival time, ms from the run's start. */
  readonly dueMs: number;
  /** Ms from the run's start; the trace's times are on the same clock (performance.now()). */
  readonly originMs: number;
  /** performance.now() when the client gave the outcome (a refusal's answer time is endMs - trace.startMs). */
  readonly endMs: number;
  readonly trace: RequestTrace;
}

/**
 * The server refused the request for load (retry later), as opposed to failing it. Chat: `HTTP 429`; Realtime:
 * the error event's code (rate_limit_exceeded, the wire name of CHORUS_ERR_RATE_LIMITED) or a 429 at the upgrade.
 */
export function isRefusal(error: string | undefined): boolean {
  if (error === undefined) return false;
  return /^HTTP 429\b|rate_limit_exceeded|CHORUS_ERR_RATE_LIMITED|Unexpected server response: 429/.test(error);
}

export interface Percentiles {
  readonly p50: number | null;
  readonly p95: number | null;
  readonly p99: number | null;
}

function percentiles(values: readonly (number | null)[]): Percentiles {
  const v = values.filter((x): x is number => x !== null && Number.isFinite(x));
  if (v.length === 0) return { p50: null, p95: null, p99: null };
  return { p50: percentile(v, 50), p95: percentile(v, 95), p99: percentile(v, 99) };
}

export interface OpenLoopRow {
  readonly variant: string;
  readonly async_chunk: boolean;
  readonly request_rate: number;
  readonly burstiness: number;
  /** Requests sent, and over what window they were offered. */
  readonly num_requests: number;
  readonly window_s: number;
  /** From the first send to the last outcome (window + drain). */
  readonly duration_s: number;
  readonly offered_rps: number;
  /** Not refused (completed or failed otherwise). */
  readonly admitted_rps: number;
  readonly completed: number;
  readonly refused: number;
  readonly refused_share: number;
  /** Failed for another reason than a refusal (timeouts, 5xx, closed sockets). */
  readonly failed: number;
  readonly refusal_ms: Pick<Percentiles, 'p50' | 'p99'>;
  readonly ttft_ms: Percentiles;
  readonly ttfp_ms: Percentiles;
  /** How late requests left against their arrival time (a realtime session opened on demand, a busy loop). */
  readonly send_lag_p99_ms: number | null;
  /** Completed requests with at least one underrun, over completed requests. */
  readonly underrun_share: number | null;
  readonly requests_with_underruns: number;
  readonly total_stall_ms: number;
  readonly slo_ttfp_ms: number | null;
  readonly good: number;
  readonly goodput_rps: number;
  readonly errors: readonly string[];
}

export interface RowContext {
  readonly variant: string;
  readonly asyncChunk: boolean;
  readonly ratePerS: number;
  readonly burstiness: number;
  readonly windowMs: number;
  /** null: goodput counts completed requests without an underrun. */
  readonly sloTtfpMs: number | null;
}

/** Whether a completed request counts toward goodput: TTFP within the SLO (when set) and no underrun. */
export function isGood(trace: RequestTrace, sloTtfpMs: number | null): boolean {
  if (!trace.ok) return false;
  const m = requestMetrics(trace);
  if (m.stalls.underruns > 0) return false;
  return sloTtfpMs === null || (m.ttfpMs !== null && m.ttfpMs <= sloTtfpMs);
}

export function openLoopRow(records: readonly OpenLoopRecord[], c: RowContext): OpenLoopRow {
  const windowS = c.windowMs / 1000;
  const perS = (n: number) => (windowS > 0 ? n / windowS : 0);
  const refusals = records.filter((r) => !r.trace.ok && isRefusal(r.trace.error));
  const admitted = records.length - refusals.length;
  const ok = records.filter((r) => r.trace.ok);
  const failed = records.filter((r) => !r.trace.ok && !isRefusal(r.trace.error));
  const metrics = ok.map((r) => requestMetrics(r.trace));
  const withUnderruns = metrics.filter((m) => m.stalls.underruns > 0).length;
  const good = ok.filter((r) => isGood(r.trace, c.sloTtfpMs)).length;
  const firstMs = Math.min(...records.map((r) => r.trace.startMs));
  const lastMs = Math.max(...records.map((r) => r.endMs));
  const refusalMs = percentiles(refusals.map((r) => r.endMs - r.trace.startMs));
  return {
    variant: c.variant,
    async_chunk: c.asyncChunk,
    request_rate: c.ratePerS,
    burstiness: c.burstiness,
    num_requests: records.length,
    window_s: windowS,
    duration_s: records.length > 0 ? (lastMs - firstMs) / 1000 : 0,
    offered_rps: perS(records.length),
    admitted_rps: perS(admitted),
    completed: ok.length,
    refused: refusals.length,
    refused_share: records.length > 0 ? refusals.length / records.length : 0,
    failed: failed.length,
    refusal_ms: { p50: refusalMs.p50, p99: refusalMs.p99 },
    ttft_ms: percentiles(metrics.map((m) => m.ttftMs)),
    ttfp_ms: percentiles(metrics.map((m) => m.ttfpMs)),
    send_lag_p99_ms: percentiles(records.map((r) => r.trace.startMs - r.originMs - r.dueMs)).p99,
    underrun_share: ok.length > 0 ? withUnderruns / ok.length : null,
    requests_with_underruns: withUnderruns,
    total_stall_ms: metrics.reduce((n, m) => n + m.stalls.totalStallMs, 0),
    slo_ttfp_ms: c.sloTtfpMs,
    good,
    goodput_rps: perS(good),
    errors: [...new Set(failed.map((r) => r.trace.error ?? 'unknown error'))],
  };
}
