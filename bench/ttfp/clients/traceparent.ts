/**
 * A W3C traceparent of the bench's own (a new trace id, sampled): sent with every chat request and every realtime
 * session, so a server that exports traces (docs/tracing.md) puts its spans in a trace the bench can name, and the
 * report can print the trace ids of the slowest requests.
 */
import { randomBytes } from 'node:crypto';

export function newTraceparent(): { readonly traceparent: string; readonly traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, traceId };
}
