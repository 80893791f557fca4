/**
 * An OTLP/HTTP JSON export request (what the OpenTelemetry JS exporter posts to /v1/traces) flattened to one plain
 * record per span, with the process that made it, in milliseconds since the epoch: what the trace buffer keeps and
 * the playground's waterfall draws. The request's shape is the OpenTelemetry packages' own type
 * (otlp-transformer's IExportTraceServiceRequest); the body comes from a client, so every field is checked before use
 * and a body of another shape is refused (OtlpShapeError), never half-read.
 */
import type {
  IExportTraceServiceRequest,
  ISpan,
} from '@opentelemetry/otlp-transformer/build/src/trace/internal-types.js';
import type { Fixed64, IAnyValue, IKeyValue } from '@opentelemetry/otlp-transformer/build/src/common/internal-types.js';

export type SpanAttribute = string | number | boolean | readonly (string | number | boolean)[];

export interface FlatSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a span with no parent. */
  readonly parentSpanId: string;
  readonly name: string;
  /** Epoch milliseconds (fractional: the exporters send nanoseconds). */
  readonly startMs: number;
  readonly endMs: number;
  /** The exporting process's service.instance.id: main, thinker#0, talker#b1... */
  readonly instance: string;
  readonly attributes: Readonly<Record<string, SpanAttribute>>;
  readonly events: readonly { readonly name: string; readonly atMs: number }[];
  /** True when the span's status is ERROR. */
  readonly error: boolean;
}

/** The body is not an OTLP JSON trace export: the message says which part. */
export class OtlpShapeError extends Error {}

const ID_HEX = /^[0-9a-f]+$/i;

function id(value: unknown, what: string, optional = false): string {
  if ((value === undefined || value === null || value === '') && optional) return '';
  // The JSON encoding carries ids as hex strings (the protobuf one as bytes, which JSON cannot hold).
  if (typeof value !== 'string' || !ID_HEX.test(value)) throw new OtlpShapeError(`${what} must be a hex string`);
  return value.toLowerCase();
}

function millis(t: Fixed64 | undefined, what: string): number {
  if (typeof t === 'number' && Number.isFinite(t)) return t / 1e6;
  if (typeof t === 'string' && /^\d+$/.test(t)) return Number(BigInt(t) / 1000n) / 1000;
  if (typeof t === 'object' && t !== null && typeof t.high === 'number' && typeof t.low === 'number')
    return Number((BigInt(t.high >>> 0) << 32n) | BigInt(t.low >>> 0)) / 1e6;
  throw new OtlpShapeError(`${what} must be nanoseconds since the epoch`);
}

function scalar(v: IAnyValue | undefined): string | number | boolean | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  if (typeof v.stringValue === 'string') return v.stringValue;
  if (typeof v.boolValue === 'boolean') return v.boolValue;
  if (v.intValue !== undefined && v.intValue !== null) return Number(v.intValue);
  if (typeof v.doubleValue === 'number') return v.doubleValue;
  return undefined;
}

function attributesOf(kvs: readonly IKeyValue[] | undefined): Record<string, SpanAttribute> {
  const out: Record<string, SpanAttribute> = {};
  if (!Array.isArray(kvs)) return out;
  for (const kv of kvs as readonly IKeyValue[]) {
    if (typeof kv?.key !== 'string') continue;
    const values = kv.value?.arrayValue?.values;
    const value = Array.isArray(values) ? values.map(scalar).filter((x) => x !== undefined) : scalar(kv.value);
    if (value !== undefined) out[kv.key] = value;
  }
  return out;
}

/** SpanStatusCode.ERROR in OTLP's numbering. */
const STATUS_ERROR = 2;

function flatten(s: ISpan, instance: string, where: string): FlatSpan {
  if (typeof s !== 'object' || s === null) throw new OtlpShapeError(`${where} must be an object`);
  return {
    traceId: id(s.traceId, `${where}.traceId`),
    spanId: id(s.spanId, `${where}.spanId`),
    parentSpanId: id(s.parentSpanId, `${where}.parentSpanId`, true),
    name: typeof s.name === 'string' ? s.name : '',
    startMs: millis(s.startTimeUnixNano, `${where}.startTimeUnixNano`),
    endMs: millis(s.endTimeUnixNano, `${where}.endTimeUnixNano`),
    instance,
    attributes: attributesOf(s.attributes),
    events: (Array.isArray(s.events) ? s.events : []).map((e, i) => ({
      name: typeof e?.name === 'string' ? e.name : '',
      atMs: millis(e?.timeUnixNano, `${where}.events[${i}].timeUnixNano`),
    })),
    error: s.status?.code === STATUS_ERROR,
  };
}

/** Every span of an export request; throws OtlpShapeError for a body that is not one. */
export function spansOfExport(body: unknown): FlatSpan[] {
  if (typeof body !== 'object' || body === null) throw new OtlpShapeError('the body must be a JSON object');
  const resourceSpans = (body as IExportTraceServiceRequest).resourceSpans ?? [];
  if (!Array.isArray(resourceSpans)) throw new OtlpShapeError('resourceSpans must be an array');
  const spans: FlatSpan[] = [];
  resourceSpans.forEach((rs, r) => {
    const resource = attributesOf(rs?.resource?.attributes);
    const instance = String(resource['service.instance.id'] ?? resource['service.name'] ?? 'unknown');
    const scopeSpans = rs?.scopeSpans ?? [];
    if (!Array.isArray(scopeSpans)) throw new OtlpShapeError(`resourceSpans[${r}].scopeSpans must be an array`);
    scopeSpans.forEach((ss, k) => {
      const list = ss?.spans ?? [];
      if (!Array.isArray(list)) throw new OtlpShapeError(`resourceSpans[${r}].scopeSpans[${k}].spans must be an array`);
      list.forEach((s, i) => spans.push(flatten(s, instance, `resourceSpans[${r}].scopeSpans[${k}].spans[${i}]`)));
    });
  });
  return spans;
}
