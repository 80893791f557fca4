/**
 * A local OTLP/HTTP trace receiver for tests: POST /v1/traces with the JSON encoding the OpenTelemetry exporter
 * sends, read through the OpenTelemetry packages' own request types (otlp-transformer's IExportTraceServiceRequest),
 * flattened to one record per span with the process (service.instance.id) that made it.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type {
  IExportTraceServiceRequest,
  ISpan,
} from '@opentelemetry/otlp-transformer/build/src/trace/internal-types.js';
import type { Fixed64, IAnyValue, IKeyValue } from '@opentelemetry/otlp-transformer/build/src/common/internal-types.js';

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Readonly<Record<string, unknown>>;
  readonly events: readonly string[];
  readonly links: readonly { readonly traceId: string; readonly spanId: string }[];
  /** The exporting process's service.instance.id ("main", "thinker#0"...) and pid. */
  readonly instance: string;
  readonly pid: number;
}

function hex(id: string | Uint8Array | undefined): string {
  if (id === undefined) return '';
  return typeof id === 'string' ? id : Buffer.from(id).toString('hex');
}

function nanos(t: Fixed64): bigint {
  if (typeof t === 'object') return (BigInt(t.high >>> 0) << 32n) | BigInt(t.low >>> 0);
  return BigInt(t);
}

function valueOf(v: IAnyValue): unknown {
  if (v.stringValue !== undefined && v.stringValue !== null) return v.stringValue;
  if (v.boolValue !== undefined && v.boolValue !== null) return v.boolValue;
  if (v.intValue !== undefined && v.intValue !== null) return Number(v.intValue);
  if (v.doubleValue !== undefined && v.doubleValue !== null) return v.doubleValue;
  if (v.arrayValue) return v.arrayValue.values.map(valueOf);
  return undefined;
}

function attributesOf(kvs: readonly IKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((kvs ?? []).map((kv) => [kv.key, valueOf(kv.value)]));
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Export requests received (the receiver's proof that something was sent). */
  requests = 0;
  readonly #arrived = new EventEmitter();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | null = null;
    const server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (b: Buffer) => parts.push(b));
      req.on('end', () => {
        if (req.url !== '/v1/traces' || !req.headers['content-type']?.includes('json')) {
          res.writeHead(415).end();
          return;
        }
        receiver!.receive(JSON.parse(Buffer.concat(parts).toString('utf8')) as IExportTraceServiceRequest);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  private receive(body: IExportTraceServiceRequest): void {
    this.requests++;
    for (const rs of body.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans) for (const s of ss.spans ?? []) this.spans.push(this.flatten(s, resource));
    }
    this.#arrived.emit('spans');
  }

  private flatten(s: ISpan, resource: Record<string, unknown>): ReceivedSpan {
    return {
      traceId: hex(s.traceId),
      spanId: hex(s.spanId),
      parentSpanId: hex(s.parentSpanId),
      name: s.name,
      startNs: nanos(s.startTimeUnixNano),
      endNs: nanos(s.endTimeUnixNano),
      attributes: attributesOf(s.attributes),
      events: s.events.map((e) => e.name),
      links: s.links.map((l) => ({ traceId: hex(l.traceId), spanId: hex(l.spanId) })),
      instance: String(resource['service.instance.id']),
      pid: Number(resource['process.pid']),
    };
  }

  /** Resolves once `cond` holds over the spans received (checked at every export), or fails at the deadline. */
  async until(what: string, cond: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs = 30_000): Promise<void> {
    if (cond(this.spans)) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#arrived.off('spans', check);
        reject(new Error(`timed out waiting for ${what}; spans: ${this.spans.map((s) => s.name).join(', ')}`));
      }, timeoutMs);
      const check = (): void => {
        if (!cond(this.spans)) return;
        clearTimeout(timer);
        this.#arrived.off('spans', check);
        resolve();
      };
      this.#arrived.on('spans', check);
    });
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
