/**
 * A W3C traceparent of the bench's own (a new trace id, sampled): sent with every chat request and every realtime
 * session, so a server that exports traces (docs/tracing.md) puts its spans in a trace the bench can name, and the
 * report can print the trace ids of the slowest requests. Unsampled (flags 00), a server under the default
 * parent-based sampler records nothing for the request (bench/tracing/serveRounds.ts compares the two on one server).
 */
import { randomBytes } from 'node:crypto';

export function newTraceparent(sampled = true): { readonly traceparent: string; readonly traceId: string } {
  const traceId = randomBytes(16).toString('hex');
  return { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-${sampled ? '01' : '00'}`, traceId };
}
