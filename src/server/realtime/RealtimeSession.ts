/**
 * One /v1/realtime connection: session configuration, the conversation, the input audio buffer, and at most
 * one active response. Every client frame is answered or rejected with an `error` event naming the offending
 * event_id; a bad frame never closes the session.
 */
import type { RawData, WebSocket } from 'ws';
import type { Engine, GenerateRequest, RequestHandle } from '../../common/engine.ts';
import { ChorusError, ErrorCodes, type SerializedError } from '../../common/errors.ts';
import type { FastifyBaseLogger } from 'fastify';
import { mergeGeneration, resolveMaxTokens, type TokenLimits } from '../generationParams.ts';
import { errorType } from '../httpErrors.ts';
import { countClientError } from '../metrics.ts';
import type { ResolvedServerOptions } from '../options.ts';
import { leadingItem, renameError } from '../media/itemNames.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import { decodeBase64Strict } from '../pcm.ts';
import { ClientInputError } from '../validate.ts';
import { eventIdOf, parseClientEvent, type ClientEventOf, type ClientEvent } from './clientEvents.ts';
import { HeldAnswer } from './HeldAnswer.ts';
import { normalizeModalities, planResponse, type PlanContext } from './responsePlan.ts';
import { InputAudio } from './InputAudio.ts';
import { Conversation, storedItemResource, toChatMessages, type StoredItem } from './Conversation.ts';
import { ResponseStream } from './ResponseStream.ts';
import { newId, sessionResource, type SessionState } from './serverEvents.ts';
import type { RequestQueue } from '../RequestQueue.ts';
import { SocketWriter } from './SocketWriter.ts';
import { SpokenItems } from './SpokenItems.ts';
import { resolveTurnDetection, VoiceTurns } from './VoiceTurns.ts';
import { VoicePrefill, type PrefillSlots } from './VoicePrefill.ts';
import type { VadService } from '../voice/VadService.ts';

export interface SessionContext {
  readonly engine: Engine;
  readonly options: ResolvedServerOptions;
  /** Of the pipeline's vocoder (its READY facts); null when the pipeline returns no audio. */
  readonly samplesPerFrame: number | null;
  readonly tokenLimits: TokenLimits;
  /** Checks media in items against the pipeline (an encoder for it, sound headers) when they are created. */
  readonly media: MediaChecker;
  /** Admission into the engine: a response.create takes a slot or is refused (CHORUS_ERR_RATE_LIMITED). */
  readonly queue: RequestQueue;
  /** The server's VAD (started by the first session that turns server_vad on). */
  readonly vad: () => Promise<VadService>;
  /** Voice prefills in flight across the server (VoicePrefill). */
  readonly prefills: PrefillSlots;
  readonly log: FastifyBaseLogger;
  /** Called once when the socket has closed and the session released everything. */
  readonly onClosed: () => void;
}

export class RealtimeSession {
  readonly #ctx: SessionContext;
  readonly #writer: SocketWriter;
  readonly #state: SessionState;
  readonly #conversation: Conversation;
  readonly #conversationId = newId('conv');
  readonly #inputAudio = new InputAudio();
  #active: ResponseStream | null = null;
  #closed = false;
  readonly #voice: VoiceTurns;
  /** With server_vad: the turn being spoken is prefilled as it arrives (null: manual turns cost nothing). */
  #prefill: VoicePrefill | null = null;
  /** With server_vad: the answer started at the first silence of the turn, held until speech_stopped (HeldAnswer). */
  #held: HeldAnswer | null = null;
  /** Assistant audio items: what was said (truncate maps played audio onto it); truncations of a live response. */
  readonly #spoken = new SpokenItems();

  constructor(ws: WebSocket, ctx: SessionContext) {
    this.#ctx = ctx;
    const { options } = ctx;
    this.#writer = new SocketWriter(ws, {
      maxStreamBufferBytes: options.maxStreamBufferBytes,
      socketHighWaterBytes: options.socketHighWaterBytes,
      onPressure: (congested) => this.#active?.setPaused(congested),
    });
    this.#conversation = new Conversation({
      maxItems: options.maxConversationItems,
      maxMediaBytes: options.maxInputAudioBytes,
    });
    this.#state = {
      id: newId('sess'),
      model: options.modelName,
      outputModalities: ['audio'],
      voice: 'alloy',
      instructions: '',
      maxOutputTokens: 'inf',
      generation: {},
      turnDetection: null,
    };
    this.#voice = new VoiceTurns(ctx.vad, {
      send: (event) => this.#writer.send(event),
      active: () => this.#active,
      audioMs: () => this.#inputAudio.appendedMs,
      bufferStartMs: () => this.#inputAudio.startMs,
      hasInputAudio: () => this.#inputAudio.bytes > 0,
      commit: (itemId, clipEndMs) => this.#onAudioCommit(itemId, clipEndMs),
      respond: (turnEndedAtMs) => this.#onResponseCreate({ type: 'response.create' }, turnEndedAtMs),
      speculate: (clipEndMs) => this.#speculate(clipEndMs),
      dropSpeculation: () => this.#dropHeld(),
      fail: (err) => this.#sendError(err, null),
      disabled: (err) => {
        this.#state.turnDetection = null;
        this.#sendError(err, null);
      },
    });
    ws.on('message', (data, isBinary) => this.#onFrame(data, isBinary));
    ws.on('close', () => this.#onClose());
    this.#writer.send({ type: 'session.created', event_id: newId('event'), session: sessionResource(this.#state) });
  }

  get id(): string {
    return this.#state.id;
  }

  #onFrame(data: RawData, isBinary: boolean): void {
    if (this.#closed) return;
    const bytes = Array.isArray(data)
      ? data.reduce((n, b) => n + b.length, 0)
      : data instanceof ArrayBuffer
        ? data.byteLength
        : data.length;
    if (bytes > this.#ctx.options.maxFrameBytes) {
      this.#sendError(
        new ClientInputError(
          `frame of ${bytes} bytes is over this server's ${this.#ctx.options.maxFrameBytes}: split audio into ` +
            `smaller appends`,
          null,
          ErrorCodes.REQUEST_TOO_LARGE,
        ),
        null,
      );
      return;
    }
    if (isBinary) {
      this.#sendError(
        new ClientInputError('binary frames are not supported: send each event as a JSON text frame'),
        null,
      );
      return;
    }
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as Buffer).toString('utf8');
    let event: ClientEvent | null = null;
    try {
      event = parseClientEvent(text);
      // A held answer was started from the session as it was: anything but more audio may change what the turn's
      // answer would be (HeldAnswer also compares the requests, so this is about not wasting work, not correctness).
      if (event.type !== 'input_audio_buffer.append') this.#dropHeld();
      this.#dispatch(event);
    } catch (err) {
      this.#sendError(err, event?.event_id ?? eventIdFromText(text));
    }
  }

  #dispatch(event: ClientEvent): void {
    switch (event.type) {
      case 'session.update':
        return this.#onSessionUpdate(event);
      case 'conversation.item.create':
        return this.#onItemCreate(event);
      case 'input_audio_buffer.append':
        return this.#onAudioAppend(event);
      case 'input_audio_buffer.commit':
        return this.#onAudioCommit();
      case 'input_audio_buffer.clear':
        this.#clearInputAudio();
        this.#voice.reset();
        this.#prefill?.release();
        return this.#writer.send({ type: 'input_audio_buffer.cleared', event_id: newId('event') });
      case 'response.create':
        return this.#onResponseCreate(event);
      case 'response.cancel':
        return this.#onResponseCancel(event);
      case 'conversation.item.truncate':
        return this.#onTruncate(event);
      default: {
        // A schema added to clientEvents.ts without a handler here fails to compile.
        const unhandled: never = event;
        throw new Error(`no handler for client event ${JSON.stringify(unhandled)}`);
      }
    }
  }

  #onSessionUpdate(event: ClientEventOf<'session.update'>): void {
    const s = event.session;
    const state = this.#state;
    if (s.max_output_tokens !== undefined) {
      resolveMaxTokens(s.max_output_tokens, this.#ctx.tokenLimits, 'session.max_output_tokens');
      state.maxOutputTokens = s.max_output_tokens;
    }
    if (s.output_modalities) state.outputModalities = normalizeModalities(s.output_modalities);
    if (s.instructions !== undefined) state.instructions = s.instructions;
    if (s.audio?.output?.voice !== undefined) state.voice = s.audio.output.voice;
    const turns = s.audio?.input?.turn_detection !== undefined ? s.audio.input.turn_detection : s.turn_detection;
    if (turns && !this.#ctx.media.accepts('audio'))
      throw new ClientInputError(
        'turn_detection needs speech input, and this pipeline has no audio encoder: serve a config with one ' +
          '(configs/tiny-omni.yaml), or keep turn_detection null and send text',
        'session.audio.input.turn_detection',
      );
    state.turnDetection = resolveTurnDetection(turns, state.turnDetection);
    this.#voice.configure(state.turnDetection);
    if (state.turnDetection)
      this.#prefill ??= VoicePrefill.for(this.#ctx.engine, this.#ctx.prefills, `voice-${this.id}`, this.#ctx.log);
    else {
      this.#prefill?.close();
      this.#prefill = null;
    }
    state.generation = mergeGeneration(state.generation, s);
    this.#writer.send({ type: 'session.updated', event_id: newId('event'), session: sessionResource(state) });
  }

  #onItemCreate(event: ClientEventOf<'conversation.item.create'>): void {
    const item = Conversation.toStored(event.item, this.#ctx.media);
    const previous = this.#conversation.insert(item, event.previous_item_id);
    this.#announceItem(item, previous);
  }

  #announceItem(item: StoredItem, previousItemId: string | null): void {
    const resource = storedItemResource(item);
    this.#writer.send({
      type: 'conversation.item.added',
      event_id: newId('event'),
      previous_item_id: previousItemId,
      item: resource,
    });
    this.#writer.send({
      type: 'conversation.item.done',
      event_id: newId('event'),
      previous_item_id: previousItemId,
      item: resource,
    });
  }

  #onAudioAppend(event: ClientEventOf<'input_audio_buffer.append'>): void {
    const audio = decodeBase64Strict(event.audio);
    if (audio === null) {
      throw new ClientInputError(
        'audio must be base64 of pcm16 (24 kHz mono, little-endian)',
        'audio',
        ErrorCodes.MEDIA_INVALID,
      );
    }
    this.#conversation.reserveMedia(audio.length);
    this.#inputAudio.append(audio);
    this.#voice.push(audio);
    if (this.#prefill && this.#voice.inTurn && !this.#active && !this.#held)
      this.#prefill.onAudio(this.#inputAudio.ms, () => this.#turnSoFar());
  }

  /** The messages the answer to the turn being spoken would get if it ended now (VoicePrefill). */
  #turnSoFar(): GenerateRequest['messages'] | null {
    const pending = this.#inputAudio.pendingItem();
    return pending && toChatMessages(this.#state.instructions, [...this.#conversation.items(), pending]).messages;
  }

  /**
   * The VAD heard the silence that may end the turn: the answer a speech_stopped now would get starts, held
   * (HeldAnswer), from the audio up to `clipEndMs` (what the commit will keep). One at a time; never with a response
   * running, without a free admission slot, or when the server turns it off.
   */
  #speculate(clipEndMs: number): void {
    if (!this.#ctx.options.speculativeVoiceAnswers || this.#held || this.#active || this.#closed) return;
    const pending = this.#inputAudio.pendingItem(this.#inputAudio.bytesUntil(clipEndMs));
    if (!pending) return;
    const releaseSlot = this.#ctx.queue.tryAcquire();
    if (!releaseSlot) return;
    try {
      const plan = planResponse({}, this.#planContext(), pending);
      this.#held = HeldAnswer.start((req) => this.#ctx.engine.generate(req), plan.request(newId('resp')), releaseSlot);
    } catch (err) {
      // The answer at speech_stopped will meet the same problem and report it; a held answer only saves time.
      releaseSlot();
      this.#ctx.log.debug({ err, sessionId: this.id }, 'speculative voice answer not started');
    }
  }

  #dropHeld(): void {
    this.#held?.discard();
    this.#held = null;
  }

  /** `clipEndMs` (server_vad): the item keeps the buffer up to there on the VAD's timeline; the rest is dropped. */
  #onAudioCommit(itemId = newId('item'), clipEndMs?: number): void {
    if (this.#inputAudio.bytes === 0)
      throw new ClientInputError('the input audio buffer is empty: append audio before committing');
    if (this.#inputAudio.bytes % 2 !== 0) {
      throw new ClientInputError(
        'the input audio buffer holds an odd number of bytes: pcm16 needs whole samples',
        null,
        ErrorCodes.MEDIA_INVALID,
      );
    }
    const media = this.#inputAudio.media(
      clipEndMs === undefined ? this.#inputAudio.bytes : this.#inputAudio.bytesUntil(clipEndMs),
    );
    // The buffer's bytes were reserved as they arrived; move them to the item instead of counting them twice.
    // A buffer the pipeline cannot use (no audio encoder, under 10 ms) is dropped too: keeping it would only
    // make every later commit fail the same way.
    this.#clearInputAudio();
    this.#prefill?.turnEnded();
    this.#ctx.media.check(media, 'input_audio_buffer (audio)');
    const item: StoredItem = { id: itemId, role: 'user', parts: [{ type: 'input_audio', text: '', media }] };
    const previous = this.#conversation.insert(item);
    this.#writer.send({
      type: 'input_audio_buffer.committed',
      event_id: newId('event'),
      previous_item_id: previous,
      item_id: item.id,
    });
    this.#announceItem(item, previous);
  }

  #clearInputAudio(): void {
    this.#conversation.releaseMedia(this.#inputAudio.bytes);
    this.#inputAudio.clear();
  }

  #planContext(): PlanContext {
    const { media, tokenLimits } = this.#ctx;
    return { state: this.#state, items: this.#conversation.items(), media, tokenLimits, prefixKey: this.#prefill?.key };
  }

  #onResponseCreate(event: ClientEventOf<'response.create'>, turnEndedAtMs: number | null = null): void {
    const startedAtMs = performance.now();
    if (this.#active) {
      throw new ClientInputError(
        `response ${this.#active.id} is still in progress: cancel it or wait for its response.done`,
        null,
        ErrorCodes.RESPONSE_ACTIVE,
      );
    }
    const r = event.response ?? {};
    const state = this.#state;
    const plan = planResponse(r, this.#planContext());
    const { outputModalities, maxOutputTokens, inConversation, rendered, audio } = plan;
    if (!rendered.messages.some((m) => m.role !== 'system')) {
      throw new ClientInputError('nothing to respond to: add a user message with conversation.item.create first');
    }
    // The reply's item is placed first: if the conversation is full this throws before any work starts.
    const itemId = newId('item');
    const previousItemId = inConversation ? this.#conversation.lastItemId : null;
    if (inConversation) this.#conversation.insert({ id: itemId, role: 'assistant', parts: [] });
    // The answer held since the turn's first silence, if it is this very request (else it goes, unheard).
    const held = this.#held;
    this.#held = null;
    const adopt = held?.matches(plan.request(held.requestId)) ? held : null;
    if (!adopt) held?.discard();
    // A Realtime response does not wait in line: the client hears at once (an error event; the session stays open).
    // A held answer brings the slot it took.
    const releaseSlot = adopt ? adopt.releaseSlot : this.#ctx.queue.tryAcquire();
    if (!releaseSlot) {
      if (inConversation) this.#conversation.remove(itemId);
      throw new ChorusError(
        ErrorCodes.RATE_LIMITED,
        `the server is busy (${this.#ctx.queue.running} responses running): send response.create again in ` +
          `${this.#ctx.queue.retryAfterSeconds} s`,
      );
    }
    const responseId = adopt ? adopt.requestId : newId('resp');
    let handle: RequestHandle;
    try {
      handle = adopt ? adopt.adopt() : this.#ctx.engine.generate(plan.request(responseId));
    } catch (err) {
      releaseSlot();
      if (inConversation) this.#conversation.remove(itemId);
      throw renameError(err, rendered.itemNamer);
    }
    const stream = new ResponseStream({
      writer: this.#writer,
      handle,
      inConversation,
      previousItemId,
      startedAtMs,
      turnEndedAtMs,
      samplesPerFrame: this.#ctx.samplesPerFrame,
      itemNamer: rendered.itemNamer,
      log: this.#ctx.log,
      state: {
        id: responseId,
        conversationId: inConversation ? this.#conversationId : null,
        outputModalities,
        voice: r.audio?.output?.voice ?? state.voice,
        maxOutputTokens,
        item: { id: itemId, audio, status: 'in_progress', text: '' },
        status: 'in_progress',
        statusDetails: null,
        usage: null,
        warnings: null,
      },
      // response.done has been handed to the socket: record the reply for later turns, accept the next one.
      onFinished: (s) => {
        releaseSlot();
        const text = this.#spoken.finished(itemId, s.text, inConversation && audio ? s.spoken : null);
        if (inConversation) this.#conversation.setText(itemId, text);
        if (this.#active === s) this.#active = null;
        if (!r.input) this.#dropUndecodableItem(s.failure, rendered.itemIds);
      },
    });
    this.#active = stream;
    this.#ctx.log.debug({ responseId, outputModalities, held: adopt !== null }, 'response started');
    stream.start();
  }

  /**
   * Media that passed the header checks but failed to decode in the encoder fails its response, naming the item.
   * Left in the conversation it would fail every later response too, so it is removed, and the client told.
   */
  #dropUndecodableItem(failure: SerializedError | null, itemIds: readonly (string | null)[]): void {
    if (failure?.code !== ErrorCodes.MEDIA_INVALID || this.#closed) return;
    const at = leadingItem(failure.message);
    const itemId = at ? itemIds[at.message] : null;
    if (!itemId || !this.#conversation.remove(itemId)) return;
    this.#ctx.log.debug({ sessionId: this.id, itemId }, 'removed an item whose media cannot be decoded');
    this.#writer.send({ type: 'conversation.item.deleted', event_id: newId('event'), item_id: itemId });
  }

  #onResponseCancel(event: ClientEventOf<'response.cancel'>): void {
    const active = this.#active;
    if (!active || (event.response_id !== undefined && event.response_id !== active.id)) {
      const which = event.response_id ?? 'in progress';
      throw new ClientInputError(`no response ${which} to cancel`, 'response_id', ErrorCodes.NO_ACTIVE_RESPONSE);
    }
    // A response whose generation already ended is only flushing its tail: its response.done is on the way
    // and answers the client, so cancelling it is a no-op rather than an error.
    if (!active.finished) active.cancel();
  }

  /**
   * conversation.item.truncate: the client played `audio_end_ms` of an assistant item's audio. The item's text
   * becomes what that audio voiced, so the next turn's context holds only what the user heard; a response still
   * running for it is cancelled.
   */
  #onTruncate(event: ClientEventOf<'conversation.item.truncate'>): void {
    // Still the active response (running, or finished with its response.done not yet out): its finish records
    // the cut text instead of the whole answer.
    const live = this.#active?.itemId === event.item_id ? this.#active : null;
    const text = this.#spoken.truncate(event, live?.spoken ?? null, this.#ctx.engine.audioOutput);
    if (!live) this.#conversation.setText(event.item_id, text);
    else if (!live.finished) live.cancel();
    this.#writer.send({
      type: 'conversation.item.truncated',
      event_id: newId('event'),
      item_id: event.item_id,
      content_index: 0,
      audio_end_ms: event.audio_end_ms,
    });
  }

  #sendError(err: unknown, eventId: string | null): void {
    const e =
      err instanceof ChorusError
        ? err
        : new ChorusError(ErrorCodes.INTERNAL, 'internal error handling the event (see the server log)', {
            cause: err,
          });
    if (e.code === ErrorCodes.INTERNAL) this.#ctx.log.error({ err, sessionId: this.id }, 'realtime event failed');
    countClientError(e.code);
    const param = err instanceof ClientInputError ? err.param : null;
    const type = errorType(e.code);
    this.#writer.send({
      type: 'error',
      event_id: newId('event'),
      error: { type, code: e.code, message: e.message, param, event_id: eventId },
    });
  }

  /** A socket that closes mid-response cancels its request; nothing of the session outlives the socket. */
  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#active?.cancel();
    this.#active = null;
    this.#dropHeld();
    this.#voice.close();
    this.#prefill?.close();
    this.#writer.discardQueued();
    this.#clearInputAudio();
    this.#ctx.log.debug({ sessionId: this.id }, 'realtime session closed');
    this.#ctx.onClosed();
  }
}

/** Best effort: the event_id of a frame that failed before it was parsed into an event. */
function eventIdFromText(text: string): string | null {
  try {
    return eventIdOf(JSON.parse(text));
  } catch {
    return null;
  }
}
