/**
 * OpenTelemetry tracing of one process (main or a stage instance), off unless the environment configures an
 * exporter: with neither OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT nor main's trace buffer
 * (CHORUS_TRACE_SINK_URL) set (or with
 * OTEL_SDK_DISABLED=true / OTEL_TRACES_EXPORTER=none) no provider exists, the hooks get null and record nothing.
 *
 * When on, spans go through a BatchSpanProcessor to the OTLP/HTTP exporter (JSON, or protobuf when
 * OTEL_EXPORTER_OTLP_PROTOCOL says http/protobuf): the step loop only appends to a
 * bounded queue, and export runs on a timer (OTEL_BSP_SCHEDULE_DELAY, default 5 s). The SDK and the exporter read
 * the standard variables themselves (endpoint, headers, timeout, sampler and its argument, OTEL_BSP_*), and
 * OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES name the process. Settings the exporter here cannot honour are
 * refused with an error naming the variable instead of being ignored.
 *
 * The SDK reports export failures (an unreachable collector) and bad settings through its diag channel: they become
 * pino warnings, never an exception on a request's path.
 */
import { diag, DiagLogLevel, type DiagLogger, type Tracer } from '@opentelemetry/api';
import type { BatchSpanProcessor, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { logger, type Logger } from '../common/log.ts';
import { otelSdk } from './otelSdk.ts';
import { ReservedSpanIds } from './spanIds.ts';

/** What the hooks need of a process's tracing: its tracer, and flushing before the process goes away. */
export interface Tracing {
  readonly tracer: Tracer;
  /** The tracer's span ids (its provider's IdGenerator): an id can be handed out before its span is made. */
  readonly ids: ReservedSpanIds;
  /** Exports what is queued; resolves (never rejects) even when the collector cannot be reached. */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

type Protocol = 'http/json' | 'http/protobuf';

/**
 * The exporter protocols this build ships: OTLP over HTTP, JSON or protobuf (grpc would need a gRPC stack). Unset, it
 * is http/json, the encoding Chorus's tests decode.
 */
const PROTOCOLS: ReadonlySet<string> = new Set<Protocol>(['http/json', 'http/protobuf']);

/** True when the environment asks for traces (an OTLP endpoint, and the SDK not disabled). */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return Boolean(userEndpointSet(env) || env[TRACE_SINK_URL_ENV]);
}

function userEndpointSet(env: NodeJS.ProcessEnv): boolean {
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * Main's in-memory trace buffer (`chorus serve --trace-buffer N`, traceSink.ts) names its loopback receiver here, and
 * the token it wants, in the environment the stage processes inherit: every process then exports a second copy of its
 * spans there, besides (not instead of) the user's collector when one is set.
 */
export const TRACE_SINK_URL_ENV = 'CHORUS_TRACE_SINK_URL';
export const TRACE_SINK_TOKEN_ENV = 'CHORUS_TRACE_SINK_TOKEN';

/** The buffer is for a person looking at an answer just given: its copy is sent soon, not every 5 s. */
const SINK_EXPORT_DELAY_MS = 250;

function spanProcessors(protocol: Protocol, env: NodeJS.ProcessEnv): BatchSpanProcessor[] {
  const { BatchSpanProcessor, OTLPTraceExporter } = otelSdk();
  const processors: BatchSpanProcessor[] = [];
  if (userEndpointSet(env)) processors.push(new BatchSpanProcessor(exporterFor(protocol, tracesUrl(env))));
  const sinkUrl = env[TRACE_SINK_URL_ENV];
  if (sinkUrl) {
    // Always JSON: the sink decodes the JSON encoding (traceSink.ts says why not protobuf).
    const exporter = new OTLPTraceExporter({
      url: sinkUrl,
      headers: { authorization: `Bearer ${env[TRACE_SINK_TOKEN_ENV] ?? ''}` },
    });
    processors.push(new BatchSpanProcessor(exporter, { scheduledDelayMillis: SINK_EXPORT_DELAY_MS }));
  }
  return processors;
}

/** The settings we would otherwise ignore, refused by name (CHORUS_ERR_TRACING_CONFIG); the protocol to use. */
function checkSupported(env: NodeJS.ProcessEnv): Protocol {
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter && exporter !== 'otlp')
    throw new ChorusError(
      ErrorCodes.TRACING_CONFIG,
      `OTEL_TRACES_EXPORTER=${exporter} is not supported: use otlp (or none to turn tracing off)`,
    );
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (protocol && !PROTOCOLS.has(protocol))
    throw new ChorusError(
      ErrorCodes.TRACING_CONFIG,
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: Chorus exports OTLP over HTTP, as http/json or ` +
        'http/protobuf; every OpenTelemetry Collector, Jaeger and Tempo accept both on port 4318',
    );
  return (protocol as Protocol | undefined) ?? 'http/json';
}

/**
 * The traces URL, from `env` (the SDK would read process.env, which a caller with an environment of its own, a test
 * or the bench's traced server, does not want): the traces endpoint as given, else the base endpoint's /v1/traces.
 * The exporter's other settings (headers, timeout) it reads from process.env itself.
 */
function tracesUrl(env: NodeJS.ProcessEnv): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (traces) return traces;
  return `${(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? '').replace(/\/+$/, '')}/v1/traces`;
}

function exporterFor(protocol: Protocol, url: string): SpanExporter {
  const { OTLPProtoTraceExporter, OTLPTraceExporter } = otelSdk();
  return protocol === 'http/protobuf' ? new OTLPProtoTraceExporter({ url }) : new OTLPTraceExporter({ url });
}

/** The SDK's own messages, at warn and above, as pino lines of this process. */
function diagLogger(log: Logger): DiagLogger {
  return {
    error: (message, ...args) => log.warn({ otel: args.map(String) }, `tracing: ${message}`),
    warn: (message, ...args) => log.warn({ otel: args.map(String) }, `tracing: ${message}`),
    info: () => undefined,
    debug: () => undefined,
    verbose: () => undefined,
  };
}

/**
 * This process's tracing, from the environment; null when it is off. `instance` names the process in its resource
 * (service.instance.id: "main", "talker#0"...), so a trace tells which process made each span.
 */
export function startTracing(
  instance: string,
  env: NodeJS.ProcessEnv = process.env,
  log: Logger = logger,
): Tracing | null {
  if (!tracingConfigured(env)) return null;
  const protocol = checkSupported(env);
  diag.setLogger(diagLogger(log.child({ tracing: instance })), {
    logLevel: DiagLogLevel.WARN,
    suppressOverrideMessage: true,
  });
  const { BasicTracerProvider, defaultResource, resourceFromAttributes } = otelSdk();
  const resource = defaultResource().merge(
    resourceFromAttributes({
      // defaultResource() reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; without them the service is chorus.
      ...(env.OTEL_SERVICE_NAME ? {} : { 'service.name': 'chorus' }),
      'service.instance.id': instance,
      'process.pid': process.pid,
    }),
  );
  const ids = new ReservedSpanIds();
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: spanProcessors(protocol, env),
    idGenerator: ids,
  });
  log.info({ instance, protocol }, 'tracing on (OTLP/HTTP)');
  return {
    tracer: provider.getTracer('chorus'),
    ids,
    flush: () => bounded(provider.forceFlush(), 'flush', log),
    shutdown: () => bounded(provider.shutdown(), 'shutdown', log),
  };
}

/**
 * A flush may wait out the exporter's timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s) on a collector that drops packets:
 * a process going away waits this long at most, then leaves the spans behind with a warning.
 */
const FLUSH_BOUND_MS = 2000;

function bounded(work: Promise<void>, what: string, log: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      log.warn({ boundMs: FLUSH_BOUND_MS }, `tracing: ${what} took too long; spans still queued are dropped`);
      resolve();
    }, FLUSH_BOUND_MS);
    timer.unref();
  });
  const done = work.catch((err: unknown) => log.warn({ err }, `tracing: ${what} failed`));
  return Promise.race([done, late]).finally(() => clearTimeout(timer));
}

let mainTracing: Tracing | null | undefined;

/**
 * Main's tracing, started on first use and kept for the process (the server, a reloaded engine and the CLI share
 * it): one provider per process, as the SDK expects.
 */
export function processTracing(): Tracing | null {
  if (mainTracing === undefined) mainTracing = startTracing('main');
  return mainTracing;
}
