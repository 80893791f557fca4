/**
 * The front end: one fastify instance serving the OpenAI-compatible HTTP API, the /v1/realtime WebSocket,
 * /health, /v1/stages, /metrics and the playground, over any Engine.
 *
 *   const app = await buildServer(engine, { apiKey });
 *   await app.listen({ host: '127.0.0.1', port: 8000 });   // or startServer(engine, opts)
 */
import { sharedTranscriber } from './transcription/sharedTranscriber.ts';
import { registerTranscriptions } from './transcription/transcriptionsRoute.ts';
import { VadService } from '../voice/index.ts';
import { basename, extname } from 'node:path';
import websocket from '@fastify/websocket';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { StageGraph } from '../common/graph.ts';
import type { Engine } from '../common/engine.ts';
import { ChorusError, ErrorCodes } from '../common/errors.ts';
import { boundPositions } from '../common/promptBytes.ts';
import { entryPromptLimits } from '../../stages/registry.ts';
import { logger as rootLogger, type Logger } from '../common/log.ts';
import { Admission } from './admission/Admission.ts';
import { RateLimitedError, RequestQueue } from './admission/RequestQueue.ts';
import { registerChatCompletions } from './chat/chatCompletions.ts';
import type { TokenLimits } from './generationParams.ts';
import { errorBody, httpStatusFor, replyError, toChorusError } from './httpErrors.ts';
import { registerInfoRoutes } from './infoRoutes.ts';
import { registerTraceRoutes } from './traceRoutes.ts';
import { registerJsonBodies } from './JsonBodyParser.ts';
import { mediaParam } from './media/itemNames.ts';
import { MediaChecker } from './media/MediaChecker.ts';
import { bridgeEngineDiagnostics, countClientError } from './metrics/metrics.ts';
import { StageMetrics } from './metrics/stageMetrics.ts';
import { resolveServerOptions, type ResolvedServerOptions, type ServerOptions } from './options.ts';
import type { RealtimeSession } from './realtime/RealtimeSession.ts';
import { registerRealtime } from './realtime/realtimeRoute.ts';
import { chooseSubprotocol, securityHook } from './security.ts';
import { ResumableSessions } from './realtime/ResumableSessions.ts';
import { exposedBeyondLoopback } from './hostCheck.ts';
import { closeSocketsGoingAway, requestTimeouts } from './connectionLimits.ts';
import { retryAfterSeconds } from './admission/retryAfter.ts';
import { ClientInputError } from './validate.ts';
import { processTracing } from '../tracing/tracing.ts';

export type { ServerOptions } from './options.ts';

export function defaultModelName(graph: StageGraph): string {
  if (graph.file === '<embedded>') return 'chorus-tiny-omni';
  return `chorus-${basename(graph.file, extname(graph.file))}`;
}

function tokenLimits(graph: StageGraph, cap: number): TokenLimits {
  const entry = graph.stages.find((s) => s.stageId === graph.entryStageId) ?? graph.stages[0];
  return {
    cap,
    stageDefault: entry?.defaultSamplingParams.maxTokens ?? cap,
    promptPositions: boundPositions(entryPromptLimits(graph).maxPositions),
  };
}

/**
 * Returns the configured (not yet listening) instance. Plugins load on ready()/listen()/inject(); the routes
 * are registered in a plugin after @fastify/websocket so that its onRoute hook sees the realtime route.
 */
export function buildServer(engine: Engine, opts: ServerOptions = {}): FastifyInstance {
  const options = resolveServerOptions(opts, defaultModelName(engine.graph));
  const log = (opts.logger ?? rootLogger).child({ component: 'server' });
  const app = newFastify(opts, options, log);
  registerJsonBodies(app, options.maxBodyBytes);
  const admission = new Admission(options.maxSessions);
  const queue = requestQueueFor(engine, options);
  queues.set(app, queue);
  bridgeEngineDiagnostics();
  // This server's engine's stage instances only, in its own registry (another engine in the process names its alike).
  const stageMetrics = new StageMetrics(() => engine.id);
  app.addHook('onClose', (_instance, done) => {
    stageMetrics.close();
    done();
  });
  // At start: a tracing setting Chorus cannot honour fails the server here, naming the variable.
  const tracing = opts.tracing !== undefined ? opts.tracing : processTracing();
  // Spans still queued are sent before the server goes (a collector that is down costs a warning, not the close).
  if (tracing) app.addHook('onClose', () => tracing.flush());
  const current = graphState(engine, options.maxResponseTokens);
  warnAboutSetup(engine, options, log);

  app.setErrorHandler(errorHandler(engine, queue, options.maxBodyBytes));

  // Before the sockets close: a socket the server closes must end its session, not leave it waiting for a resume.
  const resumes = new ResumableSessions<RealtimeSession>();
  app.addHook('preClose', (done) => {
    resumes.shutdown();
    done();
  });
  closeSocketsGoingAway(app); // before the plugin, whose own preClose would close them with no status first
  registerWebsocket(app, options);

  app.register(async (routes) => {
    // Added here, after @fastify/websocket loaded: its own onRequest hook must run first to mark upgrade
    // requests, or a refused upgrade's socket is never destroyed and server.close() waits for it forever.
    routes.addHook('onRequest', securityHook(options));
    routes.setNotFoundHandler((request, reply) => {
      countClientError(ErrorCodes.NOT_FOUND);
      const message =
        `no route ${request.method} ${request.url.split('?')[0]}: see GET /v1/models, POST ` +
        `/v1/chat/completions, /v1/realtime`;
      return reply.code(httpStatusFor(ErrorCodes.NOT_FOUND)).send(errorBody(ErrorCodes.NOT_FOUND, message));
    });
    const transcriber = sharedTranscriber(app, engine.graph);
    const { vad, turnModelFailure } = sharedVad(app, engine);
    registerRealtime(routes, engine, {
      current,
      options,
      admission,
      queue,
      vad,
      turnModelFailure,
      tracing,
      resumes,
      transcriber,
    });
    registerTranscriptions(routes, transcriber);
    registerChatCompletions(routes, {
      engine,
      tracing,
      options,
      admission,
      queue,
      transcriber,
      get tokenLimits() {
        return current().limits;
      },
      get media() {
        return current().media;
      },
    });
    if (opts.reload) registerReloadRoute(routes, opts.reload, options.apiKeys.length > 0);
    registerInfoRoutes(routes, engine, options.modelName, stageMetrics.registry);
    registerTraceRoutes(routes, opts.traceBuffer ?? null);
  });
  return app;
}

/** The fastify instance with Chorus's transport settings: TLS or not, timeouts, body limit, quiet request log. */
function newFastify(opts: ServerOptions, options: ResolvedServerOptions, log: Logger): FastifyInstance {
  const timeouts = requestTimeouts(options);
  return Fastify({
    // https when given a certificate: fastify then serves the same routes, the WebSocket upgrade included, over TLS.
    ...(opts.tls ? { https: { cert: opts.tls.cert, key: opts.tls.key, ...timeouts } } : { http: timeouts }),
    requestTimeout: options.requestTimeoutMs,
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: options.maxBodyBytes,
    // One line per request at info would drown the log under load; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
  });
}

function requestQueueFor(engine: Engine, options: ResolvedServerOptions): RequestQueue {
  return new RequestQueue(
    {
      maxRunning: options.maxRunningRequests,
      maxQueued: options.maxQueuedRequests,
      maxWaitMs: options.maxQueueWaitMs,
    },
    // Read per request: a hot reload changes engine.graph, and with it the bounds.
    {
      slo: () => engine.graph.admission,
      estimate: () => engine.firstOutputEstimate?.() ?? null,
      chunkTimeoutMs: () => engine.graph.chunkPolicy.chunkTimeoutMs,
    },
  );
}

/** Warnings at start for a setup that works but is likely not what the operator meant. */
function warnAboutSetup(engine: Engine, options: ResolvedServerOptions, log: Logger): void {
  if (options.apiKeys.length === 0 && exposedBeyondLoopback(options.host)) {
    log.warn(
      { host: options.host },
      `SERVING ${options.host} WITHOUT AN API KEY: anyone who can reach this port can use the model and hold its ` +
        `sessions. Start it with --api-key KEY (or CHORUS_API_KEY), or bind 127.0.0.1 behind a proxy that ` +
        `authenticates`,
    );
  }
  const rate = engine.audioOutput?.sampleRateHz ?? null;
  if (rate !== null && rate !== 24000) {
    log.warn(
      { sampleRateHz: rate },
      'the vocoder does not produce 24 kHz: clients expecting OpenAI pcm16 (24 kHz) will play it at the wrong speed',
    );
  }
}

/** Every error a route throws as the OpenAI error body, with Retry-After on the refusals that pass. */
function errorHandler(engine: Engine, queue: RequestQueue, maxBodyBytes: number) {
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const e = toChorusError(err, maxBodyBytes);
    if (e.code === ErrorCodes.INTERNAL) request.log.error({ err }, 'request failed');
    else request.log.debug({ code: e.code, message: e.message }, 'request rejected');
    const [status, body] = replyError(e);
    // Load is temporary: say when to come back (OpenAI's SDKs wait that long before their retry). A stage down
    // (503) is back in about as long as its last start took; a full line (429) frees up within the queue's wait.
    if (status === 429 || status === 503) {
      const shutdown = e.code === ErrorCodes.SHUTTING_DOWN || e.code === ErrorCodes.REQUEST_CANCELLED;
      const seconds = status === 503 && !shutdown ? retryAfterSeconds(engine.health(), queue.retryAfterSeconds) : null;
      // A refusal on the latency estimate knows how long its backlog takes to drain.
      const fromEstimate = e instanceof RateLimitedError ? e.retryAfterSeconds : null;
      reply.header('retry-after', String(seconds ?? fromEstimate ?? queue.retryAfterSeconds));
    }
    // OpenAI's `param`: the field at fault; for media, the item an error message starts with.
    body.error.param = err instanceof ClientInputError ? err.param : mediaParam(e.message);
    if (!reply.sent && !reply.raw.headersSent) return reply.code(status).send(body);
  };
}

function registerWebsocket(app: FastifyInstance, options: ResolvedServerOptions): void {
  app.register(websocket, {
    options: {
      // Frames over maxFrameBytes get an error event and the session lives on; only frames over twice that
      // (which would have to be buffered whole) close the socket with 1009. This caps per-frame memory.
      maxPayload: options.maxFrameBytes * 2,
      perMessageDeflate: false, // deflate would hide bufferedAmount growth behind its own queue
      handleProtocols: (protocols) => chooseSubprotocol(protocols),
    },
    errorHandler: (err, socket, request) => {
      const code = (err as { code?: string }).code ?? '';
      if (code.startsWith('WS_ERR_')) {
        // ws already closes the socket with the right status (1009 too big, 1002 protocol error).
        countClientError(
          code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' ? ErrorCodes.REQUEST_TOO_LARGE : ErrorCodes.REQUEST_INVALID,
        );
        request.log.debug({ code }, 'realtime frame rejected by ws');
        return;
      }
      request.log.error({ err }, 'realtime session failed');
      socket.close(1011, 'internal error');
    },
  });
}

/**
 * The server's one VAD service, started by the first session that turns server_vad or semantic_vad on (models in a
 * worker thread: servers whose clients commit turns themselves never load them) and closed with the server. It has
 * the end-of-turn model for semantic_vad when the YAML's realtime.semantic_vad finds one, loaded for the first
 * session that asks (a file that does not load leaves server_vad working; turnModelFailure says why).
 */
function sharedVad(
  app: FastifyInstance,
  engine: Engine,
): { vad: () => Promise<VadService>; turnModelFailure: () => ChorusError | null } {
  let started: Promise<VadService> | null = null;
  let service: VadService | null = null;
  app.addHook('onClose', async () => {
    const vad = await started?.catch(() => null);
    await vad?.close();
  });
  const vad = () =>
    (started ??= VadService.start({ turnModelPath: engine.graph.semanticVad?.modelPath ?? null }).then((s) => {
      service = s;
      return s;
    }));
  return { vad, turnModelFailure: () => service?.turnModelFailure ?? null };
}

interface GraphState {
  readonly limits: TokenLimits;
  readonly media: MediaChecker;
}

/**
 * What the front end derives from the engine's graph (token limits, which media the pipeline takes), recomputed
 * when the graph changes (hot reload: ReloadableEngine), so new requests are checked against the graph that
 * serves them.
 */
function graphState(engine: Engine, maxResponseTokens: number): () => GraphState {
  let graph: Engine['graph'] | null = null;
  let state!: GraphState;
  return () => {
    if (engine.graph !== graph) {
      graph = engine.graph;
      state = { limits: tokenLimits(graph, maxResponseTokens), media: new MediaChecker(graph) };
    }
    return state;
  };
}

/**
 * POST /admin/reload: the engine switches to the config as it now is on disk; the answer says which stages changed.
 * A bad config is a 400 with the loader's line-precise errors, and the running graph keeps serving.
 */
function registerReloadRoute(app: FastifyInstance, reload: NonNullable<ServerOptions['reload']>, keyed: boolean): void {
  app.post('/admin/reload', async (request, reply) => {
    const loopback = ['127.0.0.1', '::1', '::ffff:127.0.0.1'].includes(request.socket.remoteAddress ?? '');
    if (!keyed && !loopback)
      throw new ChorusError(
        ErrorCodes.UNAUTHORIZED,
        'reload from another host needs the server to run with --api-key; this one has none',
      );
    const result = await reload();
    return reply.send({ reloaded: true, changed_stages: result.changedStages, start_ms: result.startMs });
  });
}

const queues = new WeakMap<FastifyInstance, RequestQueue>();

/**
 * Drain (SIGTERM): stop admitting (chat 503 + Retry-After, Realtime error events), let the requests in the engine
 * finish for up to timeoutMs; resolves true when they all did. The caller then closes the server, which cancels
 * whatever is still running.
 */
export async function drainServer(app: FastifyInstance, timeoutMs: number, reason = 'draining'): Promise<boolean> {
  const queue = queues.get(app);
  if (!queue) return true;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const drained = await Promise.race([queue.drain(reason).then(() => true as const), timedOut]);
  clearTimeout(timer);
  return drained;
}

/** Builds the server and listens (127.0.0.1:8000 unless told otherwise). Returns the app and its base URL. */
export async function startServer(
  engine: Engine,
  opts: ServerOptions = {},
): Promise<{ app: FastifyInstance; url: string }> {
  const app = buildServer(engine, opts);
  const host = opts.host ?? '127.0.0.1';
  await app.listen({ host, port: opts.port ?? 8000 });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (opts.port ?? 8000);
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return { app, url: `${opts.tls ? 'https' : 'http'}://${shownHost}:${port}` };
}
