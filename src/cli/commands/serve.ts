/**
 * `chorus serve --config FILE [--host 127.0.0.1] [--port 8000] [--api-key KEY] [--allowed-origin URL]...
 *               [--allowed-hosts NAME,...] [--max-sessions N] [--max-response-tokens N] [--media-url-allow PREFIX]...`
 * --media-url-allow lets image_url name remote URLs under PREFIX (e.g. https://cdn.example.com/images/); without
 * it remote media URLs are refused and clients send media inline (data: URLs, base64 audio).
 * Loads the stage graph, starts the pipeline, serves HTTP + WebSocket, prints the URL. SIGHUP (or POST
 * /admin/reload) reloads the config: a new pipeline for the new graph, requests in flight finish on the old one
 * (src/engine/ReloadableEngine.ts); a bad config is refused and the old graph serves on. SIGINT/SIGTERM close the
 * server first (sessions end, in-flight requests are cancelled), then the engine (stage processes stop, shared
 * memory is unlinked).
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { commandFlags, type CommandFlags } from '../commandFlags.ts';
import type { ReloadableEngine } from '../../engine/ReloadableEngine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import type { ServerOptions } from '../../server/app.ts';
import { logger } from '../../common/log.ts';
import { checkAllowedHosts, checkMediaUrlAllowList } from '../../server/options.ts';
import { shutdownOnSignal } from '../shutdownOnSignal.ts';
import { intFlag, UsageError } from '../../common/cliArgs.ts';
import type { traceBufferFromFlags } from '../traceBufferFlags.ts';

export const usage = `usage: chorus serve [--config FILE] [--host 127.0.0.1] [--port 8000] [--api-key KEY]
                    [--allowed-origin URL]... [--allowed-hosts NAME,...] [--max-sessions N]
                    [--max-response-tokens N] [--max-body-bytes N] [--request-timeout S] [--ws-idle-timeout S]
                    [--client-stall-timeout S] [--media-url-allow PREFIX]... [--tls-cert FILE --tls-key FILE]
                    [--max-running-requests N] [--max-queued-requests N] [--max-queue-wait-ms MS]
                    [--drain-timeout S] [--trace-buffer N [--trace-buffer-bytes N]]

Serves the pipeline of FILE (default configs/tiny-omni.yaml): OpenAI Realtime at /v1/realtime (WebSocket),
chat completions at /v1/chat/completions, /metrics, /health and the playground at /. SIGHUP or POST /admin/reload
re-reads FILE and switches to it without dropping sessions (a bad file is refused; the running graph serves on).
  --api-key KEY             bearer token required on HTTP and the WebSocket upgrade (repeat for several
                            clients: each key gets its own prefix cache, see docs/security.md)
  --allowed-origin URL      browser origins allowed to call the API and open the WebSocket (repeatable)
  --allowed-hosts NAME,...  Host header names served besides localhost, 127.0.0.1, [::1] and --host (DNS
                            rebinding protection; others get 421); '*' turns the check off
  --max-body-bytes N        largest HTTP request body (16777216); larger ones get 413
  --request-timeout S       seconds a request's headers and body may take to arrive (60); then 408
  --ws-idle-timeout S       seconds a Realtime session may send nothing with no response running (600)
  --client-stall-timeout S  seconds a response may stay paused for a client that stopped reading (20; keep it under
                            the config's chunk_timeout_ms); then it fails with CHORUS_ERR_CLIENT_TOO_SLOW; 0: never
  --max-sessions N          concurrent sessions (realtime + HTTP); more get 429 with Retry-After
  --max-response-tokens N   cap on any response's text tokens
  --media-url-allow PREFIX  image_url may name remote URLs under PREFIX (repeatable); otherwise media is inline
  --drain-timeout S         on SIGTERM/SIGINT, seconds running answers may take to finish (30; env CHORUS_DRAIN_TIMEOUT)
  --max-running-requests N  requests in the engine at once (32); more wait in line...
  --max-queued-requests N   ...this many at most (64), each up to --max-queue-wait-ms (10000), then 429
  --tls-cert FILE           PEM certificate (chain): serve https and wss on the port (env CHORUS_TLS_CERT)
  --tls-key FILE            its PEM private key (env CHORUS_TLS_KEY)
  --trace-buffer N          keep the last N traces in memory (GET /v1/traces, the playground's waterfall): every
                            process also sends its spans to main (besides any OTEL_EXPORTER_OTLP_ENDPOINT)
  --trace-buffer-bytes N    ...within this many bytes of spans (16777216); the oldest traces go first
`;

/** A port taken or not ours, said as what to do; anything else as it was. */
function listenError(err: unknown, host: string, port: number): unknown {
  const code = (err as { code?: string }).code;
  if (code !== 'EADDRINUSE' && code !== 'EACCES') return err;
  return new ChorusError(
    ErrorCodes.INTERNAL,
    `cannot listen on ${host}:${port} (${code}): choose another --port or --host`,
    { cause: err },
  );
}

/**
 * Binds host:port and lets go, before any stage boots: a port in use is reported at once, not after the seconds the
 * pipeline takes to start (and build its models on a first run). Another process can still take the port in the
 * meantime; the listen after the boot reports that the same way. Port 0 is never taken.
 */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (err) => reject(listenError(err, host, port)));
    probe.listen({ host, port, exclusive: true }, () => resolve());
  });
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

/** `--allowed-hosts a,b --allowed-hosts c`: every name, checked now (a URL or a port there would allow nothing). */
function allowedHostsOf(values: readonly string[]): readonly string[] {
  const names = values.flatMap((v) => v.split(',')).map((n) => n.trim());
  try {
    return checkAllowedHosts(names.filter((n) => n.length > 0));
  } catch (err) {
    throw new UsageError(`--allowed-hosts: ${(err as Error).message}`, { cause: err });
  }
}

/** Both or neither; read now, so a wrong path fails before the pipeline's seconds of start-up. */
function readTls(certFile: string | undefined, keyFile: string | undefined): { cert: Buffer; key: Buffer } | null {
  if (certFile === undefined && keyFile === undefined) return null;
  if (certFile === undefined || keyFile === undefined)
    throw new UsageError('--tls-cert and --tls-key go together: give both (or neither, for plain http)');
  const read = (file: string, flag: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      throw new UsageError(`${flag} ${file}: ${(err as Error).message}`, { cause: err });
    }
  };
  return { cert: read(certFile, '--tls-cert'), key: read(keyFile, '--tls-key') };
}

const serveFlags = {
  host: { type: 'string', default: '127.0.0.1' },
  port: { type: 'string', default: '8000' },
  'api-key': { type: 'string', multiple: true },
  'allowed-origin': { type: 'string', multiple: true },
  'allowed-hosts': { type: 'string', multiple: true },
  'max-body-bytes': { type: 'string' },
  'request-timeout': { type: 'string' },
  'ws-idle-timeout': { type: 'string' },
  'client-stall-timeout': { type: 'string' },
  'max-sessions': { type: 'string' },
  'max-response-tokens': { type: 'string' },
  'media-url-allow': { type: 'string', multiple: true },
  'drain-timeout': { type: 'string', default: process.env.CHORUS_DRAIN_TIMEOUT ?? '30' },
  'max-running-requests': { type: 'string' },
  'max-queued-requests': { type: 'string' },
  'max-queue-wait-ms': { type: 'string' },
  'tls-cert': { type: 'string', default: process.env.CHORUS_TLS_CERT },
  'tls-key': { type: 'string', default: process.env.CHORUS_TLS_KEY },
  'trace-buffer': { type: 'string' },
  'trace-buffer-bytes': { type: 'string' },
} as const;

type ServeValues = CommandFlags<typeof serveFlags>;

/** Seconds on the command line, milliseconds in ServerOptions; an absent flag leaves the server's default. */
function msOption<K extends string>(key: K, seconds: number | undefined): { [P in K]?: number } {
  return (seconds !== undefined ? { [key]: 1000 * seconds } : {}) as { [P in K]?: number };
}

/**
 * The server's options from the flags, every one checked now: a bad value fails before the pipeline's seconds of
 * start-up. The reload hook and the trace buffer come with the engine.
 */
function serverOptionsOf(values: ServeValues): ServerOptions & { host: string; port: number } {
  const tls = readTls(values['tls-cert'], values['tls-key']);
  return {
    host: values.host,
    port: intFlag('--port', values.port)!,
    ...(values['api-key'] !== undefined ? { apiKey: values['api-key'] } : {}),
    allowedOrigins: values['allowed-origin'] ?? [],
    allowedHosts: allowedHostsOf(values['allowed-hosts'] ?? []),
    maxBodyBytes: intFlag('--max-body-bytes', values['max-body-bytes'], 1),
    ...msOption('requestTimeoutMs', intFlag('--request-timeout', values['request-timeout'], 1)),
    ...msOption('wsIdleTimeoutMs', intFlag('--ws-idle-timeout', values['ws-idle-timeout'], 1)),
    ...msOption('clientStallTimeoutMs', intFlag('--client-stall-timeout', values['client-stall-timeout'])),
    maxSessions: intFlag('--max-sessions', values['max-sessions']),
    maxResponseTokens: intFlag('--max-response-tokens', values['max-response-tokens']),
    maxRunningRequests: intFlag('--max-running-requests', values['max-running-requests'], 1),
    maxQueuedRequests: intFlag('--max-queued-requests', values['max-queued-requests']),
    maxQueueWaitMs: intFlag('--max-queue-wait-ms', values['max-queue-wait-ms']),
    mediaUrlAllowList: checkMediaUrlAllowList(values['media-url-allow'] ?? []),
    ...(tls ? { tls } : {}),
  };
}

type TraceBuffer = Awaited<ReturnType<typeof traceBufferFromFlags>>;

/**
 * The pipeline's, the server's and tracing's modules, loaded once the flags are checked: --help and a bad flag
 * answer without the seconds their loading takes (main.ts).
 */
async function servingModules() {
  const [config, engine, server, tracing, traceFlags] = await Promise.all([
    import('../../config/loadConfig.ts'),
    import('../../engine/ReloadableEngine.ts'),
    import('../../server/app.ts'),
    import('../../tracing/tracing.ts'),
    import('../traceBufferFlags.ts'),
  ]);
  return {
    loadConfig: config.loadConfig,
    ReloadableEngine: engine.ReloadableEngine,
    startServer: server.startServer,
    drainServer: server.drainServer,
    processTracing: tracing.processTracing,
    traceBufferFromFlags: traceFlags.traceBufferFromFlags,
  };
}

type ServingModules = Awaited<ReturnType<typeof servingModules>>;

/** Listens; when that fails, the engine and the trace sink close before the error (said as what to do) goes up. */
async function listen(
  { startServer }: ServingModules,
  engine: ReloadableEngine,
  options: ServerOptions & { host: string; port: number },
  traces: TraceBuffer,
) {
  try {
    return await startServer(engine, { ...options, traceBuffer: traces?.buffer ?? null });
  } catch (err) {
    await engine.close(0);
    await traces?.sink.close();
    throw listenError(err, options.host, options.port);
  }
}

/** SIGTERM/SIGINT drain and close, in the order that loses nothing; SIGHUP reloads the config. */
function handleSignals(
  { drainServer }: ServingModules,
  app: FastifyInstance,
  engine: ReloadableEngine,
  traces: TraceBuffer,
  drainTimeoutMs: number,
  reload: () => Promise<{ changedStages: readonly string[]; startMs: number }>,
): void {
  shutdownOnSignal(async (signal) => {
    // Drain: no new requests (503 + Retry-After), the ones running finish for up to --drain-timeout seconds...
    const drained = await drainServer(app, drainTimeoutMs, `${signal}: draining`);
    if (!drained) logger.warn({ drainTimeoutMs }, 'drain timeout: cancelling the requests still running');
    await app.close(); // ...then the sockets close and whatever still runs is cancelled
    await engine.close(); // the stages' last spans are exported as they stop...
    await traces?.sink.close(); // ...to the sink, which goes last
  });
  process.on('SIGHUP', () => {
    reload().then(
      (r) => logger.info({ changedStages: r.changedStages, startMs: r.startMs }, 'SIGHUP: reloaded'),
      (err: unknown) => logger.error({ err }, 'SIGHUP: reload refused; the running graph keeps serving'),
    );
  });
}

export async function run(argv: string[]): Promise<number> {
  const values = commandFlags(argv, serveFlags);
  const options = serverOptionsOf(values);
  const drainTimeoutMs = 1000 * intFlag('--drain-timeout', values['drain-timeout'])!;
  const traceBufferTraces = intFlag('--trace-buffer', values['trace-buffer'], 1);
  const traceBufferBytes = intFlag('--trace-buffer-bytes', values['trace-buffer-bytes'], 1024);
  const modules = await servingModules();
  const { loadConfig, processTracing, ReloadableEngine, traceBufferFromFlags } = modules;
  const graph = await loadConfig(values.config);
  await checkPortFree(options.host, options.port);
  const traces = await traceBufferFromFlags(traceBufferTraces, traceBufferBytes);
  // Before the stages start: an OTEL_* setting tracing cannot honour is one error here, not one per stage process.
  processTracing();
  const engine = await ReloadableEngine.start(graph, {}, drainTimeoutMs).catch(async (err: unknown) => {
    await traces?.sink.close();
    throw err;
  });
  // Hot reload (SIGHUP, POST /admin/reload): the file as it is now; a bad one is refused, the old graph serves on.
  const reload = async () => engine.reload(await loadConfig(values.config));
  const { app, url } = await listen(modules, engine, { ...options, reload }, traces);
  handleSignals(modules, app, engine, traces, drainTimeoutMs, reload);
  const wsUrl = url.replace(/^http/, 'ws');
  process.stdout.write(
    `chorus: serving ${url}  (playground ${url}/, realtime ${wsUrl}/v1/realtime, OpenAI API ${url}/v1)\n`,
  );
  // Runs until a signal: shutdownOnSignal exits the process once both are closed.
  return new Promise<number>(() => {});
}
