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
import { PlaybackWatch } from '../admission/PlaybackWatch.ts';
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
  /** Called once, at its first packet (first audio when it asked for audio, else first text): admission learns. */
  readonly onFirstPacket: () => void;
  /** Called once, when its audio first falls behind its playback (PlaybackWatch.ts): admission learns. */
  readonly onUnderrun: () => void;
}

type OutputEventOf<T extends OutputEvent['type']> = Extract<OutputEvent, { type: T }>;

export function streamChatCompletion(res: ServerResponse, headers: Record<string, unknown>, o: StreamOptions): void {
  new ChatStream(res, headers, o).subscribe();
}

/** One request's stream: the engine's events in (#onEvent), SSE chunks out (#write), the client's pace in between. */
class ChatStream {
  readonly #res: ServerResponse;
  readonly #headers: Record<string, unknown>;
  readonly #o: StreamOptions;
  readonly #meter: LatencyMeter;
  readonly #playback: PlaybackWatch;
  readonly #audioId = `audio_${randomBytes(12).toString('base64url')}`;
  readonly #calls: ToolCallStream | null;
  readonly #stall: ClientStallWatch;
  /** Tokens whose text is not out yet (part of a character, of a tool call) give their logprobs to the next chunk. */
  #pending: TextLogprob[] | null;
  #started = false;
  #ended = false;
  #paused = false;
  #subscription: Subscription | null = null;

  constructor(res: ServerResponse, headers: Record<string, unknown>, o: StreamOptions) {
    this.#res = res;
    this.#headers = headers;
    this.#o = o;
    this.#meter = new LatencyMeter('http', o.meta.id, o.startedAtMs, null, o.handle.traceId).onFirstPacket(
      o.audio,
      o.onFirstPacket,
    );
    this.#playback = new PlaybackWatch(o.onUnderrun);
    this.#calls = o.parseToolCalls ? new ToolCallStream() : null;
    this.#pending = o.logprobs ? [] : null;
    this.#stall = new ClientStallWatch(o.clientStallTimeoutMs, () => this.#onStalled());
    // A client that goes away before the end cancels the request.
    res.on('close', () => {
      if (this.#ended) return;
      serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'cancelled' });
      o.handle.cancel();
      this.#end();
    });
  }

  subscribe(): void {
    this.#subscription = this.#o.handle.events.subscribe({
      next: (event) => this.#onEvent(event),
      error: () => this.#onEvent(engineStreamFailed),
    });
  }

  #onEvent(event: OutputEvent): void {
    if (this.#ended) return;
    if (event.type === 'text') this.#onText(event);
    else if (event.type === 'audio') this.#onAudio(event);
    else if (event.finishReason === 'error' || event.finishReason === 'cancelled') this.#onFailed(event);
    else this.#onFinished(event);
  }

  #onText(event: OutputEventOf<'text'>): void {
    if (this.#pending && event.logprobs) this.#pending.push(...event.logprobs);
    if (event.delta.length === 0) return;
    this.#start();
    this.#meter.text();
    if (this.#calls) return this.#writeCallEvents(this.#calls.push(event.delta));
    const delta = this.#o.audio ? { audio: { id: this.#audioId, transcript: event.delta } } : { content: event.delta };
    this.#write(this.#withPending(chunkBody(this.#o.meta, delta)));
  }

  #onAudio(event: OutputEventOf<'audio'>): void {
    if (!this.#o.audio || event.pcm.length === 0) return;
    this.#start();
    this.#meter.audio();
    this.#playback.audio((1000 * event.pcm.length) / event.sampleRateHz);
    this.#write(chunkBody(this.#o.meta, { audio: { id: this.#audioId, data: pcm16ToBase64(event.pcm) } }));
  }

  /** An error chunk after the head; before it, a real HTTP status and the JSON error body. */
  #onFailed(event: OutputEventOf<'done'>): void {
    const code = event.error?.code ?? ErrorCodes.REQUEST_CANCELLED;
    const message = renameItems(event.error?.message ?? 'the request was cancelled by the server', this.#o.itemNamer);
    countClientError(code);
    serverMetrics.responsesTotal.inc({
      protocol: 'http',
      status: event.finishReason === 'error' ? 'failed' : 'cancelled',
    });
    const body = errorBody(code, message, mediaParam(message));
    this.#end();
    if (this.#started) {
      this.#write(body);
      this.#res.end();
    } else {
      this.#res.writeHead(httpStatusFor(code), { ...this.#headers, 'content-type': 'application/json; charset=utf-8' });
      this.#res.end(JSON.stringify(body));
    }
  }

  /** The final chunk (finish_reason, usage, warnings), then [DONE]. */
  #onFinished(event: OutputEventOf<'done'>): void {
    this.#start();
    serverMetrics.responsesTotal.inc({
      protocol: 'http',
      status: event.finishReason === 'stop' ? 'completed' : 'incomplete',
    });
    const warnings = event.warnings?.map((w) => renameItems(w, this.#o.itemNamer));
    if (this.#calls) this.#writeCallEvents(this.#calls.finish());
    const reason = openAiFinishReason(event.finishReason, this.#calls?.numCalls ?? 0);
    this.#write(this.#withPending(chunkBody(this.#o.meta, {}, reason, event.usage, warnings)));
    this.#write('[DONE]');
    this.#meter.finished();
    this.#end();
    this.#res.end();
  }

  /** The client stayed paused past the stall timeout: the request is cancelled and the client told why. */
  #onStalled(): void {
    if (this.#ended) return;
    const o = this.#o;
    const err = clientTooSlowError(o.clientStallTimeoutMs, o.maxStreamBufferBytes);
    this.#end(); // unsubscribed first: the engine's done(cancelled) must not follow the error
    o.handle.cancel(err.message);
    countClientError(err.code);
    serverMetrics.responsesTotal.inc({ protocol: 'http', status: 'failed' });
    // Behind what the client has not read: it sees the error when it reads again (or never, if it is gone).
    this.#res.write(`data: ${JSON.stringify(errorBody(err.code, err.message))}\n\n`);
    this.#res.end();
  }

  /** The response head, with the first delta (the role): until then a failure can still be an HTTP error. */
  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#res.writeHead(200, {
      ...this.#headers,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no', // proxies must not hold back deltas
    });
    this.#write(chunkBody(this.#o.meta, { role: 'assistant', content: this.#o.audio ? null : '' }));
  }

  #withPending(body: Record<string, unknown>): Record<string, unknown> {
    const entries = this.#pending;
    if (this.#pending) this.#pending = [];
    return withLogprobs(body, entries);
  }

  #writeCallEvents(events: readonly ToolCallEvent[]): void {
    for (const e of events) this.#write(this.#withPending(chunkBody(this.#o.meta, toolCallDelta(e))));
  }

  /** One SSE event; past maxStreamBufferBytes unread, the request pauses (and the stall watch starts). */
  #write(payload: unknown): void {
    const res = this.#res;
    res.write(`data: ${typeof payload === 'string' ? payload : JSON.stringify(payload)}\n\n`, () => this.#afterWrite());
    if (!this.#paused && res.writableLength > this.#o.maxStreamBufferBytes) {
      this.#paused = true;
      serverMetrics.streamPausesTotal.inc({ protocol: 'http' });
      this.#o.handle.pause();
      this.#stall.paused();
      this.#playback.clientPaused();
    }
  }

  // Each write's callback runs when its bytes have reached the socket, i.e. as the client reads. Resuming at half the
  // buffer (not when it is empty, as 'drain' would) keeps a client that reads at playback speed from pausing for
  // longer than the stall timeout: with the default 2 MiB it resumes after ~16 s of audio has been read.
  #afterWrite(): void {
    if (!this.#paused || this.#res.writableLength > this.#o.maxStreamBufferBytes / 2) return;
    this.#paused = false;
    this.#stall.resumed();
    if (!this.#ended) this.#o.handle.resume();
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#stall.resumed();
    this.#subscription?.unsubscribe();
    this.#o.onEnd();
  }
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
