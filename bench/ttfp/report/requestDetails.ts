/**
 * DIR/requests.json: every measured request of every run, with its own metrics and the arrival of each audio
 * delta (relative to the send), so a stall or a slow first packet can be traced to the request and moment it
 * happened without rerunning the bench.
 */
import { requestMetrics } from '../metrics.ts';
import type { RunRow } from '../results.ts';
import type { ServerTimingLookup } from '../ServerTimings.ts';
import type { RequestTrace } from '../trace.ts';

export interface RequestDetail {
  /** RunRow.variant: async/sync, or the config's name with --compare-config. */
  readonly variant: string;
  readonly async_chunk: boolean;
  readonly concurrency: number;
  /** Prompt index (the same prompt in every run). */
  readonly index: number;
  readonly request_id: string | null;
  /** Send time relative to the first send of the run, ms. */
  readonly sent_at_ms: number;
  readonly ok: boolean;
  readonly error: string | null;
  readonly ttft_ms: number | null;
  readonly ttfp_ms: number | null;
  readonly e2e_ms: number | null;
  readonly rtf: number | null;
  readonly underruns: number;
  readonly worst_stall_ms: number;
  readonly engine_ttfp_ms: number | null;
  readonly server_ttfp_ms: number | null;
  /** [arrival ms after send, audio ms] per audio delta. */
  readonly audio: readonly (readonly [number, number])[];
}

const round = (v: number | null) => (v === null ? null : Math.round(v * 100) / 100);

export function requestDetails(
  row: RunRow,
  traces: readonly RequestTrace[],
  timings: ServerTimingLookup | null,
): RequestDetail[] {
  const firstSend = Math.min(...traces.map((t) => t.startMs));
  return traces.map((t, index) => {
    const m = t.ok ? requestMetrics(t) : null;
    const s = timings?.get(t.requestId);
    return {
      variant: row.variant,
      async_chunk: row.async_chunk,
      concurrency: row.concurrency,
      index,
      request_id: t.requestId ?? null,
      sent_at_ms: round(t.startMs - firstSend)!,
      ok: t.ok,
      error: t.error ?? null,
      ttft_ms: round(m?.ttftMs ?? null),
      ttfp_ms: round(m?.ttfpMs ?? null),
      e2e_ms: round(m?.e2eMs ?? null),
      rtf: m?.rtf ?? null,
      underruns: m?.stalls.underruns ?? 0,
      worst_stall_ms: round(m?.stalls.worstStallMs ?? 0)!,
      engine_ttfp_ms: s?.engineTtfpMs ?? null,
      server_ttfp_ms: round(s?.serverTtfpMs ?? null),
      audio: t.events.flatMap((e) =>
        e.type === 'audio' ? [[round(e.atMs - t.startMs)!, round((e.samples / e.sampleRateHz) * 1000)!] as const] : [],
      ),
    };
  });
}
