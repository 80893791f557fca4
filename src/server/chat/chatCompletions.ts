/**
 * POST /v1/chat/completions: validates, admits, starts the request, then streams it (SSE) or collects it into
 * one chat.completion (audio as base64 pcm16 or WAV). A client that disconnects cancels the request.
 */
import { randomBytes } from 'node:crypto';
import { getPriority } from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine, GenerateRequest, RequestHandle, TextLogprob } from '../../common/engine.ts';
import { ChorusError, deserializeError, ErrorCodes } from '../../common/errors.ts';
import type { Admission } from '../admission/Admission.ts';
import type { RequestQueue } from '../admission/RequestQueue.ts';
import { resolveModel, servedModelNames } from '../servedModels.ts';
import { cacheSaltOf, tenantOf } from '../cachePartition.ts';
import { apiKeyOf } from '../security.ts';
import type { TokenLimits } from '../generationParams.ts';
import { LatencyMeter } from '../metrics/LatencyMeter.ts';
import { serverMetrics } from '../metrics/metrics.ts';
import type { ResolvedServerOptions } from '../options.ts';
import { floatToPcm16, wavFromPcm16 } from '../pcm.ts';
import { renameError, renameItems } from '../media/itemNames.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import type { Transcriber } from '../transcription/Transcriber.ts';
import { hearChatAudio } from './heardAudio.ts';
import type { MediaSources, VideoSettingsOf } from '../media/mediaParts.ts';
import { encodersOf, type StageGraph } from '../../common/graph.ts';
import { startDecoderSpawner } from '../../media/video/DecoderSpawner.ts';
import { DecodedClips } from '../../media/video/DecodedClips.ts';
import { planChatCompletion, type ChatPlan } from './chatRequest.ts';
import { completionBody, openAiFinishReason, withLogprobs, type CompletionMeta } from './chatShapes.ts';
import { streamChatCompletion } from './chatStream.ts';
import { ToolCallAssembly, ToolCallStream } from './toolCallStream.ts';
import type { Tracing } from '../../tracing/tracing.ts';
import { traceGenerate } from '../../tracing/responseSpan.ts';
import { contextFromTraceparent, headerValue } from '../../tracing/traceContext.ts';

export interface ChatRouteContext {
  readonly engine: Engine;
  readonly options: ResolvedServerOptions;
  readonly admission: Admission;
  readonly queue: RequestQueue;
  readonly tokenLimits: TokenLimits;
  /** Where the completions' root spans go (null: untraced). */
  readonly tracing: Tracing | null;
  /** The pipeline's media checks (current graph); audio it hears as text goes through `transcriber` (heardAudio). */
  readonly media: MediaChecker;
  readonly transcriber: Transcriber | null;
}

/** The server's media rules, and the clips it decodes kept for the next question (their budget follows reloads). */
function mediaSourcesOf(options: ResolvedServerOptions, graph: StageGraph): MediaSources {
  const clipsBudget = videoSettingsOf(graph)?.video.decodedCacheBytes ?? 0;
  return {
    allowList: options.mediaUrlAllowList,
    timeoutMs: options.mediaFetchTimeoutMs,
    maxBytes: options.mediaFetchMaxBytes,
    decodedClips: new DecodedClips(clipsBudget, (found) =>
      serverMetrics.videoDecodesTotal.inc({ result: found ? 'kept' : 'decoded' }),
    ),
  };
}

/** The video encoder stage's sampling settings, grid and priority; null when the pipeline has none. */
function videoSettingsOf(graph: StageGraph): VideoSettingsOf | null {
  const stage = encodersOf(graph).get('video');
  const encoder = stage?.encoder;
  if (!stage || !encoder?.video) return null;
  const decoderNice = Math.min(19, getPriority() + graph.stageNice + (stage.engine.nice ?? 0));
  return { video: encoder.video, imageGrid: encoder.imageGrid, decoderNice };
}

export function registerChatCompletions(app: FastifyInstance, routeContext: ChatRouteContext): void {
  // Not spread: the context's token limits follow the engine's current graph (hot reload).
  const ctx = routeContext;
  const mediaSources = mediaSourcesOf(routeContext.options, ctx.engine.graph);
  // Now, while main is small: a fork from main costs its event loop a time that grows with its memory (DecoderSpawner).
  if (videoSettingsOf(ctx.engine.graph)) startDecoderSpawner();
  // In-flight requests are cancelled when the server closes: an SSE stream could otherwise hold close() open
  // for as long as its answer takes (realtime sockets are closed by @fastify/websocket, which cancels theirs).
  const live = new Set<RequestHandle>();
  app.addHook('preClose', async () => {
    // Whatever the drain (SIGTERM) left running: the server is going away, and the answer says so.
    for (const handle of live) handle.cancel('the server shut down (drain timeout) before the answer finished');
  });

  app.post('/v1/chat/completions', async (request, reply) => {
    const startedAtMs = performance.now();
    const meta = completionMeta(request, ctx);
    // The video encoder's settings follow the engine's current graph (hot reload), like the token limits.
    const media = { ...mediaSources, video: videoSettingsOf(ctx.engine.graph) };
    const gone = new AbortController(); // the client left before the answer: its fetches, decodes, transcriptions stop
    reply.raw.once('close', () => gone.abort());
    const planned = await planChatCompletion(request.body, meta.id, ctx.tokenLimits, media, gone.signal);
    const plan = await hearChatAudio(planned, ctx.media, ctx.transcriber, gone.signal);
    const { handle, release, firstPacket, underran } = await startCompletion(request, plan, ctx, startedAtMs);
    live.add(handle);
    const end = (): void => {
      live.delete(handle);
      release();
    };
    request.log.debug(
      { requestId: meta.id, modalities: plan.request.modalities, stream: plan.stream },
      'chat completion',
    );
    if (plan.stream) {
      reply.hijack();
      streamChatCompletion(reply.raw, reply.getHeaders(), {
        meta,
        handle,
        audio: plan.audio !== null,
        parseToolCalls: plan.parseToolCalls,
        logprobs: plan.request.logprobs !== undefined,
        itemNamer: plan.itemNamer,
        startedAtMs,
        maxStreamBufferBytes: ctx.options.maxStreamBufferBytes,
        clientStallTimeoutMs: ctx.options.clientStallTimeoutMs,
        onEnd: end,
        onFirstPacket: firstPacket,
        onUnderrun: underran,
      });
      return reply;
    }
    try {
      return await collect(request, reply, plan, handle, meta, { startedAtMs, firstPacket });
    } finally {
      end();
    }
  });
}

/** The completion's id, time and model, resolved before the body is validated or its media fetched. */
function completionMeta(request: FastifyRequest, ctx: ChatRouteContext): CompletionMeta {
  // A request for another model is answered by none of the rest.
  const asked = (request.body as { model?: unknown } | null)?.model;
  const model = resolveModel(
    typeof asked === 'string' ? asked : undefined,
    servedModelNames(ctx.options.modelName, ctx.engine.graph),
  );
  return { id: `chatcmpl-${randomBytes(12).toString('base64url')}`, created: Math.floor(Date.now() / 1000), model };
}

/**
 * Admits the plan (a session, then a slot: it waits in line under load; a 429 when the line is full, or at once when
 * it would answer too late) and starts it in the engine. On any failure what it took is released.
 */
async function startCompletion(
  request: FastifyRequest,
  plan: ChatPlan,
  ctx: ChatRouteContext,
  startedAtMs: number,
): Promise<{ handle: RequestHandle; release: () => void; firstPacket: () => void; underran: () => void }> {
  const releaseSession = ctx.admission.acquire('http');
  let releaseSlot: () => void = () => {};
  const release = (): void => {
    releaseSlot();
    releaseSession();
  };
  try {
    // A slot granted now is used in this turn: the engine has the request before the next admission is decided.
    const granted = ctx.queue.admit(plan.request.modalities.includes('audio'));
    releaseSlot = typeof granted === 'function' ? granted : await granted;
    const handle = traceGenerate(ctx.tracing, (r) => ctx.engine.generate(r), partitioned(request, plan, ctx.engine), {
      protocol: 'http',
      name: 'chat.completion',
      parent: contextFromTraceparent(headerValue(request.headers.traceparent), headerValue(request.headers.tracestate)),
      startedAtMs,
    });
    refuseCapBeyondContext(handle, plan, ctx.tokenLimits.promptPositions);
    const slot = releaseSlot;
    return {
      handle,
      release,
      firstPacket: () => ctx.queue.firstPacket(slot),
      underran: () => ctx.queue.underran(slot),
    };
  } catch (err) {
    release();
    throw renameError(err, plan.itemNamer); // the engine names media items by its own message indices
  }
}

/** The plan's request in its cache partition: the client's cache_salt and the tenant of its API key. */
function partitioned(request: FastifyRequest, plan: ChatPlan, engine: Engine): GenerateRequest {
  const cacheSalt = cacheSaltOf(tenantOf(apiKeyOf(request), engine.graph.cachePartition), plan.cacheSalt);
  return cacheSalt === undefined ? plan.request : { ...plan.request, cacheSalt };
}

/**
 * A completion cap the client asked for that the Thinker's positions cannot hold after the prompt: refused with the
 * figures, as vLLM and OpenAI do (400 context_length_exceeded), instead of an answer cut short with no word. The
 * prompt's length is known once the engine has tokenized it (generate() does so at once); the request is cancelled
 * before any step runs. Without an explicit cap the answer runs to the positions left (finish_reason length).
 */
function refuseCapBeyondContext(handle: RequestHandle, plan: ChatPlan, positions: number): void {
  const asked = plan.maxTokensAsked;
  if (asked === null) return;
  const { text, audio, image } = handle.prompt;
  const promptTokens = text + audio + image;
  if (promptTokens + asked.tokens <= positions) return;
  handle.cancel('refused: the prompt and the completion cap do not fit the context');
  throw new ChorusError(
    ErrorCodes.CONTEXT_LENGTH_EXCEEDED,
    `This model's maximum context length is ${positions} tokens. However, you requested ` +
      `${promptTokens + asked.tokens} tokens (${promptTokens} in the messages, ${asked.tokens} in the completion). ` +
      `Please reduce the length of the messages or ${asked.param}.`,
  );
}

/** Gathers the whole response; resolves with the body, or rejects with a ChorusError for the error handler. */
function collect(
  request: FastifyRequest,
  reply: FastifyReply,
  plan: ChatPlan,
  handle: RequestHandle,
  meta: CompletionMeta,
  at: { readonly startedAtMs: number; readonly firstPacket: () => void },
): Promise<Record<string, unknown>> {
  const meter = new LatencyMeter('http', meta.id, at.startedAtMs, null, handle.traceId).onFirstPacket(
    plan.audio !== null,
    at.firstPacket,
  );
  const pcm: Buffer[] = [];
  let text = '';
  const logprobs: TextLogprob[] | null = plan.request.logprobs !== undefined ? [] : null;
  const calls = plan.parseToolCalls ? new ToolCallStream() : null;
  const assembly = new ToolCallAssembly();
  let sampleRateHz = 24000;
  return new Promise((resolve, reject) => {
    const onClose = (): void => {
      if (reply.raw.writableFinished) return;
      subscription.unsubscribe();
      handle.cancel();
      serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'cancelled' });
      reject(new ChorusError(ErrorCodes.REQUEST_CANCELLED, 'the client disconnected'));
    };
    reply.raw.once('close', onClose);
    const subscription = handle.events.subscribe({
      next: (event) => {
        if (event.type === 'text') {
          if (event.delta.length > 0) meter.text();
          if (logprobs && event.logprobs) logprobs.push(...event.logprobs);
          if (calls) assembly.add(calls.push(event.delta));
          else text += event.delta;
        } else if (event.type === 'audio') {
          if (plan.audio === null) return;
          meter.audio();
          pcm.push(floatToPcm16(event.pcm));
          sampleRateHz = event.sampleRateHz;
        } else {
          reply.raw.off('close', onClose);
          if (event.finishReason === 'error' || event.finishReason === 'cancelled') {
            serverMetrics.responsesTotal.inc({
              protocol: 'http',
              status: event.finishReason === 'error' ? 'failed' : 'cancelled',
            });
            const err = event.error
              ? deserializeError(event.error)
              : new ChorusError(ErrorCodes.REQUEST_CANCELLED, 'the request was cancelled by the server');
            request.log.warn({ requestId: meta.id, code: err.code }, 'chat completion failed');
            reject(renameError(err, plan.itemNamer));
            return;
          }
          serverMetrics.responsesTotal.inc({
            protocol: 'http',
            status: event.finishReason === 'stop' ? 'completed' : 'incomplete',
          });
          let audio: { id: string; base64: string } | null = null;
          if (plan.audio !== null) {
            const raw = Buffer.concat(pcm);
            const bytes = plan.audio.format === 'wav' ? wavFromPcm16(raw, sampleRateHz) : raw;
            audio = { id: `audio_${randomBytes(12).toString('base64url')}`, base64: bytes.toString('base64') };
          }
          const warnings = event.warnings?.map((w) => renameItems(w, plan.itemNamer));
          meter.finished();
          if (calls) {
            assembly.add(calls.finish());
            text = assembly.content;
          }
          const reason = openAiFinishReason(event.finishReason, assembly.calls.length);
          const body = completionBody(meta, text, audio, reason, event.usage, warnings, assembly.calls);
          resolve(withLogprobs(body, logprobs));
        }
      },
      error: () => {
        reply.raw.off('close', onClose);
        reject(new ChorusError(ErrorCodes.INTERNAL, 'the engine stream failed (see the server log)'));
      },
    });
  });
}
