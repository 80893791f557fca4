/**
 * The root span of one answer: a chat completion or a Realtime response (or a voice turn's prefill), from the
 * engine's generate() to its `done`. The engine's request carries the span's `traceparent` (GenerateRequest), so
 * every stage's spans for the request are its children, in whatever process or host they run.
 *
 * Attributes: chorus.protocol (http | realtime), chorus.modalities, chorus.request_id, gen_ai.usage.input_tokens,
 * gen_ai.usage.output_tokens, chorus.cached_tokens, chorus.audio_seconds, chorus.ttft_ms and chorus.ttfp_ms (from
 * generate() to the first text / audio event main hands the front end), chorus.status (the finish reason); events
 * first_text and first_audio. A failed answer's span has status ERROR with the error's code and message.
 */
import { SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { tap } from 'rxjs';
import type { Engine, GenerateRequest, OutputEvent, RequestHandle } from '../common/engine.ts';
import { spanTime } from './spanClock.ts';
import { contextFromTraceparent, traceparentOf } from './traceContext.ts';
import type { Tracing } from './tracing.ts';

export interface ResponseTraceInfo {
  readonly protocol: 'http' | 'realtime';
  /** The span's name: chat.completion, realtime.response... */
  readonly name: string;
  /** The client's trace context (its traceparent), or ROOT_CONTEXT for a new trace. */
  readonly parent: Context;
  readonly attributes?: Attributes;
  /** When the answer started for its client (performance.now()): default, the generate() call. */
  readonly startedAtMs?: number;
}

/** generate() under a root span; without tracing, generate() itself. */
export function traceGenerate(
  tracing: Tracing | null,
  generate: (request: GenerateRequest) => RequestHandle,
  request: GenerateRequest,
  info: ResponseTraceInfo,
): RequestHandle {
  if (!tracing) return generate(request);
  const startedAtMs = info.startedAtMs ?? performance.now();
  const span = tracing.tracer.startSpan(
    info.name,
    {
      startTime: spanTime(startedAtMs),
      attributes: {
        'chorus.protocol': info.protocol,
        'chorus.modalities': [...request.modalities],
        ...(request.requestId ? { 'chorus.request_id': request.requestId } : {}),
        ...info.attributes,
      },
    },
    info.parent,
  );
  // The stages get the root's context, or none (an unsampled root is not recorded: they record nothing either); a
  // context the caller gave in request.traceparent is the root's parent, not theirs.
  const traceparent = span.isRecording() ? traceparentOf(span) : undefined;
  let handle: RequestHandle;
  try {
    handle = generate(traceparent || request.traceparent !== undefined ? { ...request, traceparent } : request);
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: String((err as Error)?.message ?? err) });
    span.end(spanTime());
    throw err;
  }
  const { text, audio, image } = handle.prompt;
  span.setAttributes({ 'chorus.request_id': handle.requestId, 'gen_ai.usage.input_tokens': text + audio + image });
  return withSpan(handle, span, startedAtMs);
}

/** The handle with its events observed for the span (first text, first audio, done) and its end. */
function withSpan(handle: RequestHandle, span: Span, startedAtMs: number): RequestHandle {
  let ended = false;
  let subscribed = false;
  let firstText = false;
  let firstAudio = false;
  const end = (status?: string): void => {
    if (ended) return;
    ended = true;
    if (status) span.setAttribute('chorus.status', status);
    span.end(spanTime());
  };
  const onEvent = (event: OutputEvent): void => {
    if (event.type === 'text' && !firstText && event.delta.length > 0) {
      firstText = true;
      const now = performance.now();
      span.setAttribute('chorus.ttft_ms', now - startedAtMs);
      span.addEvent('first_text', spanTime(now));
    } else if (event.type === 'audio' && !firstAudio) {
      firstAudio = true;
      const now = performance.now();
      span.setAttribute('chorus.ttfp_ms', now - startedAtMs);
      span.addEvent('first_audio', spanTime(now));
    } else if (event.type === 'done') {
      const u = event.usage;
      span.setAttributes({
        'gen_ai.usage.input_tokens': u.promptTokens,
        'gen_ai.usage.output_tokens': u.completionTokens,
        'chorus.cached_tokens': u.cachedTokens ?? 0,
        'chorus.audio_seconds': u.audioSeconds,
      });
      if (event.finishReason === 'error')
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: event.error ? `${event.error.code}: ${event.error.message}` : 'error',
        });
      end(event.finishReason);
    }
  };
  const events = handle.events.pipe(
    tap({
      subscribe: () => (subscribed = true),
      next: onEvent,
      error: (err: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
        end('error');
      },
      // The front end stopped listening before `done` (its client left): the answer ends here for the trace.
      finalize: () => end('unsubscribed'),
    }),
  );
  return {
    requestId: handle.requestId,
    prompt: handle.prompt,
    events,
    // Only a sampled trace is worth linking to: an unsampled one is stored nowhere.
    ...(span.isRecording() ? { traceId: span.spanContext().traceId } : {}),
    cancel: (reason?: string) => {
      handle.cancel(reason);
      // Nobody will see its done (refused before anyone subscribed): end the span now.
      if (!subscribed) end('cancelled');
    },
    pause: () => handle.pause(),
    resume: () => handle.resume(),
  };
}

/**
 * The context a request names itself (a Realtime response.create's response.metadata.traceparent, which the session
 * puts in GenerateRequest.traceparent), when well-formed: it parents that answer instead of the session's.
 */
function requestParent(request: GenerateRequest): Context | null {
  if (request.traceparent === undefined) return null;
  const parent = contextFromTraceparent(request.traceparent);
  return trace.getSpanContext(parent) ? parent : null;
}

/**
 * The engine as a Realtime session sees it: every generate() (responses, held voice answers, turn prefills) under
 * its own root span, a child of the session's trace context. Without tracing, the engine itself.
 */
export function tracedEngine(
  engine: Engine,
  tracing: Tracing | null,
  /** attributes: every response's, read when it starts (a Realtime session's tracing setting may change). */
  info: { readonly parent: Context; readonly attributes?: Attributes | (() => Attributes) },
): Engine {
  if (!tracing) return engine;
  const generate = (request: GenerateRequest): RequestHandle =>
    traceGenerate(tracing, (r) => engine.generate(r), request, {
      protocol: 'realtime',
      name: request.prefix?.prefillOnly ? 'realtime.voice_prefill' : 'realtime.response',
      parent: requestParent(request) ?? info.parent,
      ...(info.attributes
        ? { attributes: typeof info.attributes === 'function' ? info.attributes() : info.attributes }
        : {}),
    });
  // A proxy, not a copy: the engine's getters (graph, audioOutput) follow a reload, and its methods keep their `this`.
  return new Proxy(engine, {
    get(target, key) {
      if (key === 'generate') return generate;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
