/**
 * GET /v1/realtime: the Realtime WebSocket. Refused before the upgrade while the server drains or its sessions are
 * full; each admitted socket becomes a RealtimeSession that holds its seat until it closes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { Engine } from '../../common/engine.ts';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { tracedEngine } from '../../tracing/responseSpan.ts';
import { contextFromTraceparent, headerValue } from '../../tracing/traceContext.ts';
import type { Tracing } from '../../tracing/tracing.ts';
import { TurnSpans } from '../../tracing/turnSpans.ts';
import { PrefillSlots, type VadService } from '../../voice/index.ts';
import type { Admission } from '../admission/Admission.ts';
import type { RequestQueue } from '../admission/RequestQueue.ts';
import { tenantOf } from '../cachePartition.ts';
import type { TokenLimits } from '../generationParams.ts';
import { replyError } from '../httpErrors.ts';
import { errorEvent } from './serverEvents.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import { countClientError } from '../metrics/metrics.ts';
import type { ResolvedServerOptions } from '../options.ts';
import { apiKeyOf } from '../security.ts';
import type { Transcriber } from '../transcription/Transcriber.ts';
import { FrameThumbs } from './FrameThumbs.ts';
import { RealtimeSession } from './RealtimeSession.ts';
import { resumePrincipal, type ResumableSessions } from './ResumableSessions.ts';

export interface RealtimeDeps {
  /** What the front end derived from the graph serving now (app.ts graphState): re-read per use, for hot reload. */
  readonly current: () => { readonly limits: TokenLimits; readonly media: MediaChecker };
  readonly options: ResolvedServerOptions;
  readonly admission: Admission;
  readonly queue: RequestQueue;
  readonly vad: () => Promise<VadService>;
  /** Why semantic_vad's end-of-turn model does not load, once the VAD has tried. */
  readonly turnModelFailure?: () => ChorusError | null;
  readonly tracing: Tracing | null;
  readonly resumes: ResumableSessions<RealtimeSession>;
  readonly transcriber: Transcriber | null;
}

export function registerRealtime(app: FastifyInstance, engine: Engine, deps: RealtimeDeps): void {
  const { current, options, admission, queue, vad } = deps;
  const prefills = new PrefillSlots();
  const frameThumbs = new FrameThumbs(() => engine.graph.stageNice);
  app.addHook('onClose', () => frameThumbs.close());
  app.get(
    '/v1/realtime',
    // Refuse before the upgrade when full, so clients see an HTTP 503 instead of a socket that closes.
    { websocket: true, preValidation: refuseUpgrade(queue, admission) },
    (socket, request) => {
      const release = takeSeat(socket, admission);
      if (!release) return;
      const parent = traceParentOf(request);
      // The session's tracing setting (session.tracing) names each of its response spans, as it is when one starts.
      const attributes = () => session.traceAttributes();
      const session: RealtimeSession = new RealtimeSession(socket, {
        engine: tracedEngine(engine, deps.tracing, { parent, attributes }),
        serverTracing: deps.tracing !== null,
        turnSpans: TurnSpans.of(deps.tracing, parent),
        options,
        get samplesPerFrame() {
          return engine.audioOutput?.samplesPerFrame ?? null;
        },
        get tokenLimits() {
          return current().limits;
        },
        get media() {
          return current().media;
        },
        queue,
        vad,
        turnModelFailure: deps.turnModelFailure,
        prefills,
        frameThumbs,
        log: request.log,
        onClosed: release,
        transcriber: deps.transcriber,
        // The partition in effect when the session opened holds for its life (a reload does not move it).
        tenant: tenantOf(apiKeyOf(request), engine.graph.cachePartition),
        resumes: deps.resumes,
        principal: resumePrincipal(apiKeyOf(request)),
      });
      request.log.debug({ sessionId: session.id }, 'realtime session opened');
    },
  );
}

/** The upgrade's refusal while the server drains or its sessions are full (with Retry-After); else it goes on. */
function refuseUpgrade(queue: RequestQueue, admission: Admission) {
  return async (_request: FastifyRequest, reply: FastifyReply) => {
    if (queue.closed) {
      // Draining (SIGTERM): a session opened now would be cut at close; the client goes elsewhere now.
      const [status, body] = replyError(
        new ChorusError(
          ErrorCodes.SHUTTING_DOWN,
          'the server is shutting down: open the session on another server, or retry later',
        ),
      );
      return reply.code(status).header('retry-after', String(queue.retryAfterSeconds)).send(body);
    }
    if (!admission.full) return;
    const [status, body] = replyError(
      new ChorusError(ErrorCodes.RATE_LIMITED, 'too many sessions: retry after the Retry-After seconds'),
    );
    return reply.code(status).header('retry-after', String(queue.retryAfterSeconds)).send(body);
  };
}

/** The session's seat (its release), or null when none is left: the socket then gets an error event and 1013. */
function takeSeat(socket: WebSocket, admission: Admission): (() => void) | null {
  try {
    // exact check: upgrades in flight may have passed preValidation together
    return admission.acquire('realtime');
  } catch (err) {
    const e = err as ChorusError;
    countClientError(e.code);
    socket.send(JSON.stringify(errorEvent(e, null, null, 'event_overloaded')));
    socket.close(1013, 'try again later');
    return null;
  }
}

/**
 * The upgrade's traceparent (malformed: none) parents every response of the session; a browser, which cannot set a
 * WebSocket's headers, gives it in the URL (?traceparent=...). A response.create's response.metadata.traceparent
 * parents that response instead (tracedEngine).
 */
function traceParentOf(request: FastifyRequest) {
  const query = request.query as Record<string, unknown>;
  return contextFromTraceparent(
    headerValue(request.headers.traceparent) ?? query.traceparent,
    headerValue(request.headers.tracestate) ?? query.tracestate,
  );
}
