/**
 * One realtime response: turns the engine's OutputEvents into Realtime GA server events on the SocketWriter.
 *
 * Text placement (one rule, kept everywhere): when the response has audio, its text is the audio's transcript
 * and travels as response.output_audio_transcript.delta (as OpenAI does); when it is text-only, the text
 * travels as response.output_text.delta. Never both.
 *
 * Ordering: the opening events and text deltas go out at once; audio deltas and everything that must follow
 * the audio (output_audio.done, content_part.done, output_item.done, response.done) go through the writer's
 * ordered lane. The response stays active until response.done has been handed to the socket, so a next
 * response's events can never overtake this one's tail.
 *
 * A client that stops reading pauses the request (SocketWriter's pressure); paused past the client-stall timeout, the
 * response fails with CHORUS_ERR_CLIENT_TOO_SLOW (ClientStallWatch): its request is cancelled in every stage at once,
 * and the failed response.done waits, like everything else, for the client to read.
 */
import type { Subscription } from 'rxjs';
import { ErrorCodes, type SerializedError } from '../../common/errors.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { FinishReason, OutputEvent, RequestHandle, Usage } from '../../common/engine.ts';
import { ClientStallWatch, clientTooSlowError } from '../ClientStallWatch.ts';
import { errorType, wireCode } from '../httpErrors.ts';
import { LatencyMeter } from '../metrics/LatencyMeter.ts';
import { PlaybackWatch } from '../admission/PlaybackWatch.ts';
import { countClientError, serverMetrics } from '../metrics/metrics.ts';
import { renameItems, renameSerialized, type ItemNamer } from '../media/itemNames.ts';
import { pcm16ToBase64 } from '../pcm.ts';
import type { SocketWriter } from './SocketWriter.ts';
import { ResponseCalls, type ResponseCallsContext } from './ResponseCalls.ts';
import type { ContentPartResource, ResponseStatusDetails } from './ResponseResource.ts';
import type { ServerEvent } from './ServerEvent.ts';
import { itemResource, newId, responseResource, type ResponseState } from './serverEvents.ts';
import { packetMark, packetMarksOn, PERF_TO_MONOTONIC_MS } from '../../common/packetMarks.ts';

export interface SpokenPiece {
  readonly text: string;
  readonly tokens: number;
}

export interface SpokenText {
  readonly pieces: readonly SpokenPiece[];
  /** Audio sent to the client, ms. */
  readonly audioMs: number;
}

export interface ResponseStreamContext {
  readonly writer: SocketWriter;
  readonly handle: RequestHandle;
  readonly state: ResponseState;
  /** False for out-of-band responses (conversation: 'none'). */
  readonly inConversation: boolean;
  readonly previousItemId: string | null;
  /** performance.now() when the response.create frame arrived. */
  readonly startedAtMs: number;
  /** performance.now() at the speech_stopped this response answers (server_vad), else null. */
  readonly turnEndedAtMs?: number | null;
  /** Of the pipeline's vocoder (its READY facts); null when the pipeline returns no audio. */
  readonly samplesPerFrame: number | null;
  /** Names media items in the engine's errors and warnings by conversation item. */
  readonly itemNamer: ItemNamer;
  readonly log: FastifyBaseLogger;
  /** How long the request may stay paused for this client before the response fails (0: no limit). */
  readonly clientStallTimeoutMs: number;
  /** The pause threshold (SocketWriter's), named in the error a stalled client gets. */
  readonly maxStreamBufferBytes: number;
  /** The response failed because its client stopped reading: the engine holds nothing of it any more. */
  readonly onStalled?: () => void;
  /** Called once, when the first audio has been handed to the socket. */
  readonly onFirstAudio?: () => void;
  /** Called once, when its audio first falls behind its playback (PlaybackWatch.ts). */
  readonly onUnderrun?: () => void;
  /**
   * Under function tools: calls are read out of the text (ResponseCalls). `forced` (tool_choice required or a
   * name): the answer is a call only, so the response has no message. The first call ends the response.
   */
  readonly tools?: ({ readonly forced: boolean } & Pick<ResponseCallsContext, 'addItem' | 'removeItem'>) | null;
  /** Called once, when response.done has been handed to the socket (or the socket is gone). */
  readonly onFinished: (stream: ResponseStream) => void;
}

const statusByFinish: Record<FinishReason, ResponseState['status']> = {
  stop: 'completed',
  length: 'incomplete',
  cancelled: 'cancelled',
  error: 'failed',
};

export class ResponseStream {
  readonly #ctx: ResponseStreamContext;
  #subscription: Subscription | null = null;
  #finished = false;
  /** onFinished has run (it runs once: when response.done is handed over, or when the session ends first). */
  #reported = false;
  #paused = false;
  #cancelling = false;
  #sampleRateHz = 24000;
  readonly #meter: LatencyMeter;
  readonly #playback: PlaybackWatch | null;
  readonly #stall: ClientStallWatch;
  #firstAudioQueued = false;
  #textTokens = 0;
  #audioSamples = 0;
  #failure: SerializedError | null = null;
  #cancelReason: 'client_cancelled' | 'turn_detected' = 'client_cancelled';
  /** The text as it arrived, with how many tokens each piece took (truncate maps played audio back onto it). */
  readonly #pieces: SpokenPiece[] = [];
  /** The function calls, under tools (null: none can be made). */
  readonly #calls: ResponseCalls | null;
  /** The message item's closing events are out (at the end, or when a call begins). */
  #messageClosed: boolean;

  constructor(ctx: ResponseStreamContext) {
    this.#ctx = ctx;
    const withMessage = !ctx.tools?.forced;
    this.#messageClosed = !withMessage;
    this.#calls = ctx.tools
      ? new ResponseCalls({
          writer: ctx.writer,
          responseId: ctx.state.id,
          firstOutputIndex: withMessage ? 1 : 0,
          addItem: ctx.inConversation ? ctx.tools.addItem : null,
          removeItem: ctx.tools.removeItem,
        })
      : null;
    this.#meter = new LatencyMeter(
      'realtime',
      ctx.state.id,
      ctx.startedAtMs,
      ctx.turnEndedAtMs ?? null,
      ctx.handle.traceId,
    );
    this.#stall = new ClientStallWatch(ctx.clientStallTimeoutMs, () => this.#failTooSlow());
    this.#playback = ctx.onUnderrun ? new PlaybackWatch(ctx.onUnderrun) : null;
  }

  get id(): string {
    return this.#ctx.state.id;
  }

  /** The assistant item this response writes. */
  get itemId(): string {
    return this.#ctx.state.item.id;
  }

  /** The text (or transcript) so far. */
  get text(): string {
    return this.#ctx.state.item.text;
  }

  get finished(): boolean {
    return this.#finished;
  }

  /** What was said: text pieces with their token counts, and the audio sent so far. */
  get spoken(): SpokenText {
    return { pieces: this.#pieces, audioMs: (1000 * this.#audioSamples) / this.#sampleRateHz };
  }

  /** The engine's error when the response failed, as the engine named it (its message indices). */
  get failure(): SerializedError | null {
    return this.#failure;
  }

  /** Sends the opening events and starts forwarding the engine's stream. */
  start(): void {
    const { writer, state } = this.#ctx;
    writer.send({ type: 'response.created', event_id: newId('event'), response: this.#resource() });
    if (!this.#messageClosed) this.#openMessage();
    if (writer.congested) this.setPaused(true);
    this.#subscription = this.#ctx.handle.events.subscribe({
      next: (event) => this.#onEvent(event),
      error: (err: unknown) => {
        this.#ctx.log.error({ err, responseId: state.id }, 'engine stream failed');
        this.#finish('error', null, { code: ErrorCodes.INTERNAL, message: 'engine stream failed' });
      },
    });
  }

  /** The response with its output: the message (unless it is calls only) and the calls. */
  #resource() {
    const calls = this.#calls?.resources() ?? [];
    return responseResource(
      this.#ctx.state,
      this.#ctx.tools?.forced ? calls : [itemResource(this.#ctx.state.item), ...calls],
    );
  }

  #openMessage(): void {
    const { writer, state } = this.#ctx;
    const base = { response_id: state.id, item_id: state.item.id, output_index: 0 };
    writer.send({
      type: 'response.output_item.added',
      event_id: newId('event'),
      response_id: state.id,
      output_index: 0,
      item: itemResource(state.item),
    });
    if (this.#ctx.inConversation) {
      writer.send({
        type: 'conversation.item.added',
        event_id: newId('event'),
        previous_item_id: this.#ctx.previousItemId,
        item: itemResource(state.item),
      });
    }
    writer.send({
      type: 'response.content_part.added',
      event_id: newId('event'),
      ...base,
      content_index: 0,
      part: state.item.audio ? { type: 'audio', transcript: '' } : { type: 'text', text: '' },
    });
  }

  /**
   * Client cancel, socket close, or the user speaking over it (turn_detected): no delta after this;
   * response.done(cancelled) follows queued control events.
   */
  cancel(reason: 'client_cancelled' | 'turn_detected' = 'client_cancelled'): void {
    if (this.#finished || this.#cancelling) return;
    this.#cancelling = true;
    this.#cancelReason = reason;
    // Unsubscribe first: an engine that emits done(cancelled) synchronously inside cancel() must not reach
    // #finish before the queued audio is discarded (it would discard the closing events too).
    this.#subscription?.unsubscribe();
    this.#subscription = null;
    this.#ctx.handle.cancel();
    this.#ctx.writer.discardQueued();
    this.#finish('cancelled', null);
  }

  /** Backpressure from the socket: hold the request's generation back, or let it continue. */
  setPaused(paused: boolean): void {
    if (this.#finished || this.#cancelling || paused === this.#paused) return;
    this.#paused = paused;
    if (paused) {
      this.#playback?.clientPaused();
      serverMetrics.streamPausesTotal.inc({ protocol: 'realtime' });
      this.#ctx.handle.pause();
      this.#stall.paused();
    } else {
      this.#stall.resumed();
      this.#ctx.handle.resume();
    }
  }

  /** Paused past the stall timeout: ended as a cancel is (no delta after this), but failed, naming the reason. */
  #failTooSlow(): void {
    if (this.#finished || this.#cancelling) return;
    this.#cancelling = true;
    const err = clientTooSlowError(this.#ctx.clientStallTimeoutMs, this.#ctx.maxStreamBufferBytes);
    this.#ctx.log.debug({ responseId: this.#ctx.state.id }, 'client too slow: response failed');
    // As in cancel(): unsubscribed before the engine can answer the cancel with done(cancelled).
    this.#subscription?.unsubscribe();
    this.#subscription = null;
    this.#ctx.handle.cancel(err.message);
    this.#ctx.writer.discardQueued();
    this.#ctx.onStalled?.();
    this.#finish('error', null, { code: err.code, message: err.message });
  }

  #onEvent(event: OutputEvent): void {
    if (this.#finished) return;
    const { writer, state } = this.#ctx;
    const base = { response_id: state.id, item_id: state.item.id, output_index: 0, content_index: 0 };
    if (event.type === 'text') {
      if (event.delta.length === 0) return;
      this.#meter.text();
      this.#textTokens += event.tokenIds.length;
      const calls = this.#calls;
      const text = calls ? calls.push(event.delta) : event.delta;
      // Each token's text its own piece when the delta carries several, so a truncate trims to a token.
      this.#messageText(text, event.tokenIds.length, calls ? undefined : event.tokenTexts);
      if (calls?.started) this.#closeMessage();
      // A call ends its response, as OpenAI's do: the answer goes no further once one is whole.
      if (calls && calls.completed > 0) this.#endAfterCall();
    } else if (event.type === 'audio') {
      // The audio is the message's: once a call has begun, what the voice makes of the call's text is not sent.
      if (!state.item.audio || event.pcm.length === 0 || this.#messageClosed) return;
      packetMark(state.id, 'audio_event');
      this.#audioSamples += event.pcm.length;
      this.#sampleRateHz = event.sampleRateHz;
      this.#playback?.audio((1000 * event.pcm.length) / event.sampleRateHz);
      const delta: ServerEvent = {
        type: 'response.output_audio.delta',
        event_id: newId('event'),
        ...base,
        delta: pcm16ToBase64(event.pcm),
      };
      // TTFP counts when the first audio is handed to the socket, not when the engine produced it.
      const first = !this.#firstAudioQueued;
      const onSent = packetMarksOn()
        ? (atMs: number) => {
            packetMark(state.id, 'handed', atMs + PERF_TO_MONOTONIC_MS);
            packetMark(state.id, 'written');
            if (first) this.#firstAudio(atMs);
          }
        : first
          ? (atMs: number) => this.#firstAudio(atMs)
          : undefined;
      writer.send(delta, onSent);
      this.#firstAudioQueued = true;
    } else {
      this.#finish(event.finishReason, event.usage, event.error, event.warnings);
    }
  }

  #firstAudio(handedAtMs: number): void {
    this.#meter.audio(handedAtMs);
    this.#ctx.onFirstAudio?.();
  }

  /** Text of the message (outside calls): its transcript or text deltas. */
  #messageText(text: string, tokens: number, tokenTexts?: readonly string[]): void {
    if (text.length === 0 || this.#messageClosed) return;
    const { writer, state } = this.#ctx;
    state.item.text += text;
    if (tokenTexts) for (const t of tokenTexts) this.#pieces.push({ text: t, tokens: 1 });
    else this.#pieces.push({ text, tokens });
    const type = state.item.audio ? 'response.output_audio_transcript.delta' : 'response.output_text.delta';
    const base = { response_id: state.id, item_id: state.item.id, output_index: 0, content_index: 0 };
    writer.send({ type, event_id: newId('event'), ...base, delta: text });
  }

  /** A call is whole: the request ends here (whatever the model would write next) and the response completes. */
  #endAfterCall(): void {
    if (this.#finished || this.#cancelling) return;
    this.#cancelling = true;
    // As in cancel(): unsubscribed before the engine can answer the cancel with done(cancelled).
    this.#subscription?.unsubscribe();
    this.#subscription = null;
    this.#ctx.handle.cancel();
    this.#finish('stop', null);
  }

  #finish(
    reason: FinishReason,
    usage: Usage | null,
    engineError?: SerializedError,
    warnings?: readonly string[],
  ): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#stall.resumed();
    this.#failure = engineError ?? null;
    const error = engineError && renameSerialized(engineError, this.#ctx.itemNamer);
    if (warnings && warnings.length > 0)
      this.#ctx.state.warnings = warnings.map((w) => renameItems(w, this.#ctx.itemNamer));
    this.#subscription?.unsubscribe();
    this.#subscription = null;
    const { writer, state } = this.#ctx;
    state.status = statusByFinish[reason];
    if (!this.#messageClosed) state.item.status = reason === 'stop' ? 'completed' : 'incomplete';
    state.statusDetails = this.#statusDetails(reason, error);
    state.usage = usage ?? this.#localUsage();
    state.latency = this.#meter.latency();
    serverMetrics.responsesTotal.inc({ protocol: 'realtime', status: state.status });
    if (error) countClientError(error.code);

    // What the parser held back is the message's (or the rest of a call's arguments, when the answer ended whole).
    const rest = this.#calls?.end(reason === 'stop') ?? '';
    this.#messageText(rest, 0);
    this.#closeMessage();
    const done: ServerEvent = { type: 'response.done', event_id: newId('event'), response: this.#resource() };
    // response.done is queued behind the answer's audio: the callback runs when it reaches the socket.
    const sent = () => {
      if (reason === 'stop' || reason === 'length') this.#meter.finished();
      this.#report();
    };
    if (writer.open) writer.send(done, sent);
    else this.#report();
  }

  /** The session ended with this response's response.done still queued: it is finished all the same. */
  abandon(): void {
    if (this.#finished) this.#report();
  }

  /** The message item's closing events (once): at the end, or when a call begins after its text. */
  #closeMessage(): void {
    if (this.#messageClosed) return;
    this.#messageClosed = true;
    const { writer, state } = this.#ctx;
    const base = { response_id: state.id, item_id: state.item.id, output_index: 0, content_index: 0 };
    if (!this.#finished) state.item.status = 'completed';
    // Text-side closers go out at once (they belong to the text lane); the rest queue behind the audio.
    if (state.item.audio) {
      writer.send({
        type: 'response.output_audio_transcript.done',
        event_id: newId('event'),
        ...base,
        transcript: state.item.text,
      });
      writer.send({ type: 'response.output_audio.done', event_id: newId('event'), ...base });
    } else {
      writer.send({ type: 'response.output_text.done', event_id: newId('event'), ...base, text: state.item.text });
    }
    const part: ContentPartResource = state.item.audio
      ? { type: 'audio', transcript: state.item.text }
      : { type: 'text', text: state.item.text };
    writer.send({ type: 'response.content_part.done', event_id: newId('event'), ...base, part });
    const item = itemResource(state.item);
    writer.send({
      type: 'response.output_item.done',
      event_id: newId('event'),
      response_id: state.id,
      output_index: 0,
      item,
    });
    if (this.#ctx.inConversation) {
      writer.send({
        type: 'conversation.item.done',
        event_id: newId('event'),
        previous_item_id: this.#ctx.previousItemId,
        item,
      });
    }
  }

  #report(): void {
    if (this.#reported) return;
    this.#reported = true;
    this.#ctx.onFinished(this);
  }

  #statusDetails(reason: FinishReason, error?: SerializedError): ResponseStatusDetails | null {
    switch (reason) {
      case 'stop':
        return null;
      case 'length':
        return { type: 'incomplete', reason: 'max_output_tokens' };
      case 'cancelled':
        return { type: 'cancelled', reason: this.#cancelReason };
      case 'error': {
        // OpenAI's type from the code: a prompt over the Thinker's positions or bad media is the client's to fix
        // (invalid_request_error), a stage that died is not (server_error).
        const code = error?.code ?? ErrorCodes.INTERNAL;
        const message = error?.message ?? 'request failed';
        return { type: 'failed', error: { type: errorType(code), code: wireCode(code), message } };
      }
    }
  }

  /** When we end the response ourselves (cancel), the engine's usage has not arrived: count what was sent. */
  #localUsage(): Usage {
    const audioSeconds = this.#audioSamples / this.#sampleRateHz;
    const prompt = this.#ctx.handle.prompt; // what was admitted: a cancelled response still read its prompt
    return {
      promptTokens: prompt.text + prompt.audio + prompt.image,
      promptTokenDetails: prompt,
      completionTokens: this.#textTokens,
      audioFrames: this.#ctx.samplesPerFrame ? Math.ceil(this.#audioSamples / this.#ctx.samplesPerFrame) : 0,
      audioSeconds,
    };
  }
}
