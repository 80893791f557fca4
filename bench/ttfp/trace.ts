/**
 * What the bench client records for one request: its send time and every output event's arrival time on the
 * client's clock (performance.now()). Metrics are computed from these traces afterwards, by pure functions
 * (metrics.ts), so the arithmetic can be tested on hand-made traces without a server.
 */

export type TraceEvent =
  /** A text delta (the transcript when the response has audio). */
  | { readonly type: 'text'; readonly atMs: number }
  /** An audio delta: `samples` mono samples at sampleRateHz. */
  | { readonly type: 'audio'; readonly atMs: number; readonly samples: number; readonly sampleRateHz: number }
  /** The last event of the response (realtime response.done, SSE [DONE]). */
  | { readonly type: 'done'; readonly atMs: number };

export interface RequestTrace {
  /** performance.now() just before the request left the client. */
  readonly startMs: number;
  /** In arrival order. */
  readonly events: readonly TraceEvent[];
  /** False when the request failed, was cancelled or timed out; failed requests are counted, not measured. */
  readonly ok: boolean;
  readonly error?: string;
  /** The server's request id (realtime response id, chat completion id), to join with server-side timings. */
  readonly requestId?: string;
  /**
   * The trace id of the traceparent the client sent (a chat request's own; a realtime session's, shared by its
   * responses): with a tracing server, the request's spans are in this trace.
   */
  readonly traceId?: string;
  /** From the server's usage report, when it sent one. */
  readonly promptTokens?: number;
  /** Of promptTokens, those the server served from its prefix cache (usage's cached_tokens). */
  readonly cachedTokens?: number;
  readonly textTokens?: number;
}
