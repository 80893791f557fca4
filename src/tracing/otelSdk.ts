/**
 * The OpenTelemetry SDK (tracer provider, span processor, resources) and its OTLP exporters, loaded when a process
 * turns tracing on (tracing.ts startTracing), not when it merely may: a process without an exporter configured,
 * as most are, never touches them, and loading them regardless was ~0.5 s of CPU per process quiet (~1 s at load
 * 15; the exporters pull in the metrics SDK and the protobuf serializers), a third of a stage process's start-up,
 * paid five times per pipeline. The packages are CommonJS, so a synchronous require keeps startTracing synchronous.
 * @opentelemetry/api and core stay static imports: they are light, and the hooks use them with tracing off too.
 */
import { createRequire } from 'node:module';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as OtlpProto from '@opentelemetry/exporter-trace-otlp-proto';
import type * as Resources from '@opentelemetry/resources';
import type * as TraceBase from '@opentelemetry/sdk-trace-base';

const require = createRequire(import.meta.url);

export interface OtelSdk {
  readonly OTLPTraceExporter: typeof OtlpHttp.OTLPTraceExporter;
  readonly OTLPProtoTraceExporter: typeof OtlpProto.OTLPTraceExporter;
  readonly resourceFromAttributes: typeof Resources.resourceFromAttributes;
  readonly defaultResource: typeof Resources.defaultResource;
  readonly BasicTracerProvider: typeof TraceBase.BasicTracerProvider;
  readonly BatchSpanProcessor: typeof TraceBase.BatchSpanProcessor;
  readonly RandomIdGenerator: typeof TraceBase.RandomIdGenerator;
}

let loaded: OtelSdk | undefined;

export function otelSdk(): OtelSdk {
  if (loaded) return loaded;
  const http = require('@opentelemetry/exporter-trace-otlp-http') as typeof OtlpHttp;
  const proto = require('@opentelemetry/exporter-trace-otlp-proto') as typeof OtlpProto;
  const resources = require('@opentelemetry/resources') as typeof Resources;
  const base = require('@opentelemetry/sdk-trace-base') as typeof TraceBase;
  loaded = {
    OTLPTraceExporter: http.OTLPTraceExporter,
    OTLPProtoTraceExporter: proto.OTLPTraceExporter,
    resourceFromAttributes: resources.resourceFromAttributes,
    defaultResource: resources.defaultResource,
    BasicTracerProvider: base.BasicTracerProvider,
    BatchSpanProcessor: base.BatchSpanProcessor,
    RandomIdGenerator: base.RandomIdGenerator,
  };
  return loaded;
}
