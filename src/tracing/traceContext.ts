/**
 * W3C trace context as a string that travels: a client's `traceparent` header into a parent context, a span into
 * the `traceparent` that rides in the control messages (AddRequest.traceparent) to stage processes and remote hosts.
 * Parsing and formatting are the SDK's W3C propagator's, so a malformed header is what the spec says it is: no
 * parent (the request starts a new trace), never an error.
 */
import { ROOT_CONTEXT, trace, type Context, type Span, type SpanContext } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const propagator = new W3CTraceContextPropagator();

type Carrier = Record<string, string>;
const getter = {
  get: (carrier: Carrier, key: string) => carrier[key],
  keys: (carrier: Carrier) => Object.keys(carrier),
};
const setter = {
  set: (carrier: Carrier, key: string, value: string) => {
    carrier[key] = value;
  },
};

/** The context a `traceparent` (and optional `tracestate`) names; ROOT_CONTEXT when absent or malformed. */
export function contextFromTraceparent(traceparent: unknown, tracestate?: unknown): Context {
  if (typeof traceparent !== 'string') return ROOT_CONTEXT;
  const carrier: Carrier = { traceparent };
  if (typeof tracestate === 'string') carrier.tracestate = tracestate;
  return propagator.extract(ROOT_CONTEXT, carrier, getter);
}

/** The `traceparent` that makes `span` the parent of spans made elsewhere. */
export function traceparentOf(span: Span): string | undefined {
  return traceparentOfContext(span.spanContext());
}

/** The same for a span known by its context only (made later: spanIds.ts). */
export function traceparentOfContext(spanContext: SpanContext): string | undefined {
  const carrier: Carrier = {};
  propagator.inject(trace.setSpanContext(ROOT_CONTEXT, spanContext), carrier, setter);
  return carrier.traceparent;
}

/** An HTTP header's single value (a repeated header is malformed for trace context: no parent). */
export function headerValue(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
