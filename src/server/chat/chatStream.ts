/**
 * Streams one request as Server-Sent Events: `data: {chat.completion.chunk}` per delta, a final chunk with
 * finish_reason and usage, then `data: [DONE]`. An engine failure mid-stream is sent as `data: {"error": ...}`
 * (what the OpenAI SDKs turn into an APIError) and the stream ends without [DONE].
 *
 * The response head waits for the engine's first event: a request that fails before it produced anything
 * (media that only fails to decode in the encoder stage, a stage that died) gets a real HTTP status and the
 * JSON error body, as if it had failed before admission. The head then goes out with the first delta, so
 * this costs a client nothing in time to first token.
 *
 * A slow reader pauses the request (write buffer over maxStreamBufferBytes) until it has read half of it; one that
 * stays paused past the client-stall timeout gets a CHORUS_ERR_CLIENT_TOO_SLOW error chunk and the request is
 * cancelled in every stage (ClientStallWatch). A client that disconnects cancels it.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Subscription } from 'rxjs';
import type { OutputEvent, RequestHandle, TextLogprob } from '../../common/engine.ts';
import { ErrorCodes } from '../../common/errors.ts';
import { ClientStallWatch, clientTooSlowError } from '../ClientStallWatch.ts';
import { errorBody, httpStatusFor } from '../httpErrors.ts';
import { mediaParam, renameItems, type ItemNamer } from '../media/itemNames.ts';
import { countClientError, serverMetrics } from '../metrics/metrics.ts';
import { pcm16ToBase64 } from '../pcm.ts';
import { chunkBody, openAiFinishReason, withLogprobs, type CompletionMeta } from './chatShapes.ts';
import { LatencyMeter } from '../metrics/LatencyMeter.ts';
import { toolCallDelta, ToolCallStream, type ToolCallEvent } from './toolCallStream.ts';

export interface StreamOptions {
  readonly meta: CompletionMeta;
  readonly handle: RequestHandle;
  readonly audio: boolean;
  /** The answer's text is read for tool calls (sent as delta.tool_calls). */
  readonly parseToolCalls: boolean;
  /** Rewrites the engine's media item names in errors and warnings into the request body's. */
  readonly itemNamer: ItemNamer;
  readonly startedAtMs: number;
  readonly maxStreamBufferBytes: number;
  /** How long the request may stay paused for this client before it fails (0: no limit). */
  readonly clientStallTimeoutMs: number;
  /** The request asked for logprobs: each chunk carries those of the tokens its delta holds. */
  readonly logprobs: boolean;
  /** Called exactly once, when the stream has ended for any reason. */
  readonly onEnd: () => void;
}

export function streamChatCompletion(res: ServerResponse, headers: Record<string, unknown>, o: StreamOptions): void {
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    res.writeHead(200, {
      ...headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no', // proxies must not hold back deltas
    });
    write(chunkBody(o.meta, { role: 'assistant', content: o.audio ? null : '' }));
  };
  const meter = new LatencyMeter('http', o.meta.id, o.startedAtMs, null, o.handle.traceId);
  const audioId = `audio_${randomBytes(12).toString('base64url')}`;
  const calls = o.parseToolCalls ? new ToolCallStream() : null;
  // Tokens whose text is not out yet (part of a character, of a tool call) give their logprobs to the next chunk.
  let pending: TextLogprob[] | null = o.logprobs ? [] : null;
  const withPending = (body: Record<string, unknown>): Record<string, unknown> => {
    const entries = pending;
    if (pending) pending = [];
    return withLogprobs(body, entries);
  };
  const writeCallEvents = (events: readonly ToolCallEvent[]): void => {
    for (const e of events) write(withPending(chunkBody(o.meta, toolCallDelta(e))));
  };
  let ended = false;
  let paused = false;
  let subscription: Subscription | null = null;

  const end = (): void => {
    if (ended) return;
    ended = true;
    stall.resumed();
    subscription?.unsubscribe();
    o.onEnd();
  };
  const stall = new ClientStallWatch(o.clientStallTimeoutMs, () => {
    if (ended) return;
    const err = clientTooSlowError(o.clientStallTimeoutMs, o.maxStreamBufferBytes);
    end(); // unsubscribed first: the engine's done(cancelled) must not follow the error
    o.handle.cancel(err.message);
    countClientError(err.code);
    serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'failed' });
    // Behind what the client has not read: it sees the error when it reads again (or never, if it is gone).
    res.write(`data: ${JSON.stringify(errorBody(err.code, err.message))}\n\n`);
    res.end();
  });
  // Each write's callback runs when its bytes have reached the socket, i.e. as the client reads. Resuming at half the
  // buffer (not when it is empty, as 'drain' would) keeps a client that reads at playback speed from pausing for
  // longer than the stall timeout: with the default 2 MiB it resumes after ~16 s of audio has been read.
  const afterWrite = (): void => {
    if (!paused || res.writableLength > o.maxStreamBufferBytes / 2) return;
    paused = false;
    stall.resumed();
    if (!ended) o.handle.resume();
  };
  const write = (payload: unknown): void => {
    res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`, afterWrite);
    if (!paused && res.writableLength > o.maxStreamBufferBytes) {
      paused = true;
      serverMetrics.streamPausesTotal.inc({ protocol: 'http' });
      o.handle.pause();
      stall.paused();
    }
  };

  // A client that goes away before the end cancels the request.
  res.on('close', () => {
    if (!ended) {
      serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'cancelled' });
      o.handle.cancel();
      end();
    }
  });

  const onEvent = (event: OutputEvent): void => {
    if (ended) return;
    if (event.type === 'text') {
      if (pending && event.logprobs) pending.push(...event.logprobs);
      if (event.delta.length === 0) return;
      start();
      meter.text();
      if (calls) return writeCallEvents(calls.push(event.delta));
      const delta = o.audio ? { audio: { id: audioId, transcript: event.delta } } : { content: event.delta };
      write(withPending(chunkBody(o.meta, delta)));
    } else if (event.type === 'audio') {
      if (!o.audio || event.pcm.length === 0) return;
      start();
      meter.audio();
      write(chunkBody(o.meta, { audio: { id: audioId, data: pcm16ToBase64(event.pcm) } }));
    } else if (event.finishReason === 'error' || event.finishReason === 'cancelled') {
      const code = event.error?.code ?? ErrorCodes.REQUEST_CANCELLED;
      const message = renameItems(event.error?.message ?? 'the request was cancelled by the server', o.itemNamer);
      countClientError(code);
      serverMetrics.responsesTotal.inc({
        protocol: 'http',
        status: event.finishReason === 'error' ? 'failed' : 'cancelled',
      });
      const body = errorBody(code, message, mediaParam(message));
      end();
      if (started) {
        write(body);
        res.end();
      } else {
        res.writeHead(httpStatusFor(code), { ...headers, 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(body));
      }
    } else {
      start();
      serverMetrics.responsesTotal.inc({
        protocol: 'http',
        status: event.finishReason === 'stop' ? 'completed' : 'incomplete',
      });
      const warnings = event.warnings?.map((w) => renameItems(w, o.itemNamer));
      if (calls) writeCallEvents(calls.finish());
      const reason = openAiFinishReason(event.finishReason, calls?.numCalls ?? 0);
      write(withPending(chunkBody(o.meta, {}, reason, event.usage, warnings)));
      write('[DONE]');
      meter.finished();
      end();
      res.end();
    }
  };
  subscription = o.handle.events.subscribe({
    next: onEvent,
    error: () => onEvent(engineStreamFailed),
  });
}

export const engineStreamFailed: OutputEvent = {
  type: 'done',
  finishReason: 'error',
  error: { code: ErrorCodes.INTERNAL, message: 'the engine stream failed (see the server log)' },
  usage: {
    promptTokens: 0,
    promptTokenDetails: { text: 0, audio: 0, image: 0, video: 0 },
    completionTokens: 0,
    audioFrames: 0,
    audioSeconds: 0,
  },
  atMs: 0,
};
