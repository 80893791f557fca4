/**
 * `chorus bench --compare-tracing`: the same config served traced ("tracing-on": every process exports every span,
 * 100% sampling, to a local OTLP/HTTP sink the bench runs) and untraced ("tracing-off"), side by side. Stage
 * processes read OTEL_* when they start, so each server's are started under its own environment; main's root spans
 * go through the server's own tracing (ServerOptions.tracing), so the two servers of one process differ only there.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, startTracing, type Tracing } from '../../src/index.ts';

/** The variables that turn an exporter on (src/tracing/tracing.ts tracingConfigured). */
const ENDPOINT_VARS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const;

/** A collector stand-in: accepts every export and counts it (the cost measured is the sender's, not a parser's). */
export class OtlpSink {
  exports = 0;
  bytes = 0;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpSink> {
    let sink: OtlpSink | null = null;
    const server = createServer((req, res) => {
      req.on('data', (b: Buffer) => (sink!.bytes += b.length));
      req.on('end', () => {
        sink!.exports++;
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    sink = new OtlpSink(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return sink;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** What a server of one side needs: its main tracing, and the environment its stage processes start under. */
export interface TracingSide {
  /** For ServerOptions.tracing: null on the untraced side. */
  readonly tracing: Tracing | null;
  /** Runs `start` (which forks the stage processes) with this side's OTEL_* in process.env, then restores it. */
  withEnv<T>(start: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openTracingSide(traced: boolean, log: Logger): Promise<TracingSide> {
  const sink = traced ? await OtlpSink.start() : null;
  const env: Record<string, string | undefined> = Object.fromEntries(ENDPOINT_VARS.map((k) => [k, undefined]));
  if (sink) Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on' });
  const withEnv = async <T>(start: () => Promise<T> | T): Promise<T> => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    const apply = (values: Record<string, string | undefined>) => {
      for (const [k, v] of Object.entries(values))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    };
    apply(env);
    try {
      return await start();
    } finally {
      apply(saved);
    }
  };
  // Under the side's environment too: the SDK's exporter and span processor read theirs when they are built.
  const tracing = sink ? await withEnv(() => startTracing('main', process.env, log)) : null;
  return {
    tracing,
    withEnv,
    async close() {
      await tracing?.shutdown();
      if (sink) log.info({ exports: sink.exports, bytes: sink.bytes }, 'tracing-on: what the OTLP sink received');
      await sink?.close();
    },
  };
}
