/**
 * One /v1/realtime connection: session configuration, the conversation, the input audio buffer, and the dispatch
 * of every client event (the responses themselves, at most one active, are SessionResponses'). Every client frame
 * is answered or rejected with an `error` event naming the offending event_id; a bad frame never closes the session.
 */
import type { TurnSpans } from '../../tracing/turnSpans.ts';
import type { RawData, WebSocket } from 'ws';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { countClientError } from '../metrics/metrics.ts';
import { ClientInputError } from '../validate.ts';
import { cacheSaltOf } from '../cachePartition.ts';
import { eventIdFromText, frameText, parseClientEvent, type ClientEventOf, type ClientEvent } from './clientEvents.ts';
import { InputAudioBuffer } from './InputAudioBuffer.ts';
import { Conversation } from './Conversation.ts';
import { ConversationInput } from './ConversationInput.ts';
import { errorEvent, newId, newSessionState, sessionResource, type SessionState } from './serverEvents.ts';
import { SessionPrefill } from './SessionPrefill.ts';
import { SessionResponses, type ResponseContext } from './SessionResponses.ts';
import { SocketWriter } from './SocketWriter.ts';
import { IdleWatch } from './IdleWatch.ts';
import { VoiceTurns } from './VoiceTurns.ts';
import { InputTranscription } from './InputTranscription.ts';
import { HeardTurns } from './HeardTurns.ts';
import type { Transcriber } from '../transcription/Transcriber.ts';
import type { PrefillSlots, VadService } from '../../voice/index.ts';
import { DEFAULT_CAMERA, DEFAULT_REALTIME_RESUME } from '../../common/realtimeSettings.ts';
import { CameraFrames, isCameraFrame } from './CameraFrames.ts';
import { DeferredFrames } from './DeferredFrames.ts';
import type { FrameThumbs } from './FrameThumbs.ts';
import type { ResumableSessions } from './ResumableSessions.ts';
import { resumeTarget } from './SessionResume.ts';
import { SessionSocket } from './SessionSocket.ts';
import { applySessionUpdate } from './sessionUpdate.ts';
import { afterTurnModelFailure } from './turnDetection.ts';
import { monotonicMs, packetMarksOn } from '../../common/packetMarks.ts';
import { tracingAttributes } from './sessionTracing.ts';
import type { Attributes } from '@opentelemetry/api';

export interface SessionContext extends ResponseContext {
  /** The server's VAD (started by the first session that turns server_vad on). */
  readonly vad: () => Promise<VadService>;
  /** Why semantic_vad's end-of-turn model does not load, once the VAD has tried (null: not known to fail). */
  readonly turnModelFailure?: () => ChorusError | null;
  /** Voice prefills in flight across the server (VoicePrefill). */
  readonly prefills: PrefillSlots;
  /** Thumbnails of camera frames, for the near-duplicate check (one worker for the server). */
  readonly frameThumbs: FrameThumbs;
  /** Called once when the socket has closed and the session released everything. */
  readonly onClosed: () => void;
  /** Its voice turns as spans (null without tracing: nothing is recorded). */
  readonly turnSpans?: TurnSpans | null;
  /** The cache partition of the session's API key (cachePartition.ts); null: none. */
  readonly tenant?: string | null;
  /** The pipeline's speech-to-text for input transcription; null or absent: it has none (each item says so). */
  readonly transcriber?: Transcriber | null;
  /** The server exports traces (session.tracing then names the response spans; else it is reported off). */
  readonly serverTracing?: boolean;
  /** The server's resumable sessions (session.resume), and who this socket's client is to them (its key's digest). */
  readonly resumes: ResumableSessions<RealtimeSession>;
  readonly principal: string | null;
}

export class RealtimeSession {
  readonly #ctx: SessionContext;
  readonly #writer: SocketWriter;
  readonly #state: SessionState;
  readonly #conversation: Conversation;
  readonly #inputAudio: InputAudioBuffer;
  /** The items the client creates or commits, announced, heard or transcribed; and read back. */
  readonly #input: ConversationInput;
  /** response.create to response.done: the active response, the held answer, what they leave in the conversation. */
  readonly #responses: SessionResponses;
  #closed = false;
  readonly #voice: VoiceTurns;
  /** With server_vad: the turn being spoken is prefilled as it arrives; kept camera frames too. */
  readonly #prefill: SessionPrefill;
  /** Closes the session when the client sends nothing for the idle timeout with no response running. */
  readonly #idle: IdleWatch;
  readonly #transcription: InputTranscription;
  /** The pipeline hears speech as its transcript (MediaChecker.heard): responses wait for it. Null: it hears audio. */
  readonly #heard: HeardTurns | null;
  /** Which socket the session talks to, and whether it outlives a dropped one (session resume). */
  readonly #socket: SessionSocket;
  /** No client event but session.resume yet: this connection may still take over another session. */
  #pristine = true;
  /** Camera frames: the window kept, near-duplicates skipped (CameraFrames). */
  readonly #camera: CameraFrames;
  /** Frames that arrived during a spoken turn or its held answer: added once the turn is over. */
  readonly #deferredFrames = new DeferredFrames(() => this.#responses.holding || this.#voice.inTurn);
  /** When the frame being handled arrived (monotonic), for the bench's first-packet account; 0 when nobody listens. */
  #frameAtMs = 0;

  constructor(ws: WebSocket, ctx: SessionContext) {
    this.#ctx = ctx;
    const { options } = ctx;
    this.#writer = new SocketWriter(ws, {
      maxStreamBufferBytes: options.maxStreamBufferBytes,
      socketHighWaterBytes: options.socketHighWaterBytes,
      onPressure: (congested) => this.#responses.active?.setPaused(congested),
    });
    this.#conversation = new Conversation({
      maxItems: options.maxConversationItems,
      maxMediaBytes: options.maxInputAudioBytes,
    });
    this.#inputAudio = new InputAudioBuffer(this.#conversation);
    this.#state = newSessionState({
      model: options.modelName,
      cacheSalt: cacheSaltOf(ctx.tenant ?? null, undefined),
      serverTracing: ctx.serverTracing ?? false,
      transcriber: ctx.transcriber ? (ctx.transcriber.name ?? "the pipeline's speech-to-text") : null,
    });
    this.#transcription = new InputTranscription(ctx.transcriber ?? null, this.#writer);
    this.#heard = ctx.media.heard('audio') ? new HeardTurns(this.#transcription, this.#conversation) : null;
    this.#responses = new SessionResponses(ctx, {
      sessionId: this.#state.id,
      writer: this.#writer,
      state: this.#state,
      conversation: this.#conversation,
      inputAudio: this.#inputAudio.audio,
      prefixKey: () => this.#prefill.key,
    });
    this.#input = new ConversationInput({
      ctx,
      writer: this.#writer,
      state: this.#state,
      conversation: this.#conversation,
      responses: this.#responses,
      transcription: this.#transcription,
      heard: this.#heard,
      closed: () => this.#closed,
    });
    this.#voice = this.#voiceTurns(ctx);
    this.#prefill = new SessionPrefill({
      ctx,
      sessionId: this.#state.id,
      cacheSalt: () => this.#state.cacheSalt,
      inputAudio: this.#inputAudio.audio,
      responses: this.#responses,
      inTurn: () => this.#voice.inTurn,
    });
    this.#camera = new CameraFrames(ctx.engine.graph.realtimeCamera ?? DEFAULT_CAMERA, ctx.frameThumbs, {
      has: (itemId) => this.#conversation.get(itemId) !== undefined,
      drop: (itemId) => this.#responses.deleteItem({ type: 'conversation.item.delete', item_id: itemId }),
      kept: () => this.#prefill.frameKept(),
    });
    this.#idle = this.#idleWatch(options.wsIdleTimeoutMs);
    this.#socket = new SessionSocket(ws, this.#writer, {
      sessionId: this.#state.id,
      log: ctx.log,
      onFrame: (data, isBinary) => this.#onFrame(data, isBinary),
      onEnded: () => this.#onClose(),
    });
    this.#writer.send({ type: 'session.created', event_id: newId('event'), session: sessionResource(this.#state) });
  }

  /** The turns the VAD finds in the input audio (server_vad, semantic_vad), and what each does to the session. */
  #voiceTurns(ctx: SessionContext): VoiceTurns {
    const turnSpans = ctx.turnSpans ?? null;
    return new VoiceTurns(ctx.vad, {
      send: (event) => {
        turnSpans?.observe(event);
        this.#writer.send(event);
      },
      active: () => this.#responses.active,
      audioMs: () => this.#inputAudio.audio.appendedMs,
      bufferStartMs: () => this.#inputAudio.audio.startMs,
      hasInputAudio: () => this.#inputAudio.audio.bytes > 0,
      commit: (itemId, clipEndMs) => this.#onAudioCommit(itemId, clipEndMs),
      respond: (turnEndedAtMs) =>
        this.#respond(
          () => {
            this.#responses.create({ type: 'response.create' }, turnEndedAtMs);
            this.#addDeferredFrames();
          },
          null,
          false,
        ),
      // An answer started before the transcript could not be the turn's: heard speech is not speculated on.
      speculate: (clipEndMs) => (this.#heard ? undefined : this.#responses.speculate(clipEndMs)),
      dropSpeculation: () => {
        this.#responses.dropHeld();
        this.#addDeferredFrames();
      },
      speechStarted: () => {
        this.#responses.settlePlayback(); // the turn's prefill reads the history as heard
        this.#prefill.turnAudio();
      },
      fail: (err) => this.#sendError(err, null),
      disabled: (err) => {
        this.#state.turnDetection = null;
        this.#sendError(err, null);
      },
      turnModelFailed: (err) => {
        const after = afterTurnModelFailure(this.#state.turnDetection, ctx.engine.graph.semanticVad, err);
        this.#state.turnDetection = after.turns;
        if (after.error) this.#sendError(after.error, null);
        else
          this.#writer.send({
            type: 'session.updated',
            event_id: newId('event'),
            session: sessionResource(this.#state),
          });
        return after.turns;
      },
    });
  }

  /** Closes the session when its client sends nothing for `idleMs` with no response running. */
  #idleWatch(idleMs: number): IdleWatch {
    return new IdleWatch(
      idleMs,
      () => !this.#responses.idle,
      () => {
        const seconds = Math.round(idleMs / 1000);
        this.#sendError(
          new ChorusError(
            ErrorCodes.SESSION_IDLE,
            `the session sent no event for ${seconds} s with no response running, so it was closed to free its ` +
              `slot: open a new one (or send events more often than the server's --ws-idle-timeout)`,
          ),
          null,
        );
        this.#socket.end(1000, 'idle timeout');
      },
    );
  }

  get id(): string {
    return this.#state.id;
  }

  /** What its response spans carry of session.tracing (sessionTracing.ts). */
  traceAttributes(): Attributes {
    return tracingAttributes(this.#state.tracing);
  }

  /** Ends the session for good (the server is closing). */
  end(): void {
    this.#socket.end(1001, 'session ended');
  }

  /** session.resume on another connection named this session: it continues on `ws` (SessionSocket.takeOver). */
  takeOver(ws: WebSocket, lastSeq: number): void {
    this.#socket.takeOver(ws, lastSeq, sessionResource(this.#state));
    this.#idle.touch();
  }

  #onFrame(data: RawData, isBinary: boolean): void {
    if (this.#closed) return;
    this.#frameAtMs = packetMarksOn() ? monotonicMs() : 0;
    this.#idle.touch();
    let text: string;
    try {
      text = frameText(data, isBinary, this.#ctx.options.maxFrameBytes);
    } catch (err) {
      this.#sendError(err, null);
      return;
    }
    let event: ClientEvent | null = null;
    try {
      event = parseClientEvent(text);
      if (this.#deferredFrames.defer(event)) return;
      // A held answer was started from the session as it was: anything but more audio (or a look at an item) may
      // change what the turn's answer would be (HeldAnswer also compares the requests, so this is about not wasting
      // work, not correctness).
      if (event.type !== 'input_audio_buffer.append' && event.type !== 'conversation.item.retrieve')
        this.#responses.dropHeld();
      if (event.type !== 'session.resume') this.#pristine = false;
      this.#dispatch(event);
    } catch (err) {
      this.#sendError(err, event?.event_id ?? eventIdFromText(text));
    }
    this.#addDeferredFrames();
  }

  #addDeferredFrames(): void {
    if (this.#closed) return;
    for (const event of this.#deferredFrames.take()) {
      try {
        this.#onItemCreate(event);
      } catch (err) {
        this.#sendError(err, event.event_id ?? null);
      }
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
        this.#inputAudio.clear();
        this.#voice.reset();
        this.#prefill.release();
        return this.#writer.send({ type: 'input_audio_buffer.cleared', event_id: newId('event') });
      case 'response.create': {
        this.#heard?.checkInput(event.response?.input);
        const frameAtMs = this.#frameAtMs;
        return this.#respond(() => this.#responses.create(event, null, frameAtMs), event.event_id ?? null, true);
      }
      case 'response.cancel':
        if (event.response_id === undefined && this.#heard?.dropWaiting()) return;
        return this.#responses.cancel(event);
      case 'conversation.item.truncate':
        return this.#responses.truncate(event);
      case 'conversation.item.delete':
        return this.#responses.deleteItem(event);
      case 'conversation.item.retrieve':
        return this.#input.retrieve(event);
      case 'session.resume.enable':
        return this.#enableResume();
      case 'session.resume':
        return this.#resumeOther(event);
      case 'output_audio.playback_ack':
        return this.#responses.playbackAck(event);
      default: {
        // A schema added to clientEvents.ts without a handler here fails to compile.
        const unhandled: never = event;
        throw new Error(`no handler for client event ${JSON.stringify(unhandled)}`);
      }
    }
  }

  #enableResume(): void {
    const settings = this.#ctx.engine.graph.realtimeResume ?? DEFAULT_REALTIME_RESUME;
    this.#writer.send(this.#socket.enableResume(settings, this.#ctx.resumes, this.#ctx.principal, this));
  }

  /** session.resume: this connection carries the token's session from now on; this fresh one ends unseen. */
  #resumeOther(event: ClientEventOf<'session.resume'>): void {
    const resume = { token: event.resume_token, principal: this.#ctx.principal };
    const target = resumeTarget(this.#ctx.resumes, resume, this, this.#pristine);
    target.takeOver(this.#socket.ws!, event.last_seq);
    this.#socket.handOver();
  }

  #onSessionUpdate(event: ClientEventOf<'session.update'>): void {
    const state = this.#state;
    applySessionUpdate(event.session, state, this.#ctx);
    this.#voice.configure(state.turnDetection);
    this.#prefill.configure(state.turnDetection !== null && !this.#heard, this.#camera.frames.length > 0);
    this.#writer.send({ type: 'session.updated', event_id: newId('event'), session: sessionResource(state) });
  }

  #onItemCreate(event: ClientEventOf<'conversation.item.create'>): void {
    const item = this.#input.create(event);
    if (isCameraFrame(item))
      this.#camera.arrived(item).catch((err: unknown) => this.#sendError(err, event.event_id ?? null));
  }

  /** Creates a response; on a pipeline that hears speech as text, once the transcripts it needs are in. */
  #respond(create: () => void, eventId: string | null, byClient: boolean): void {
    if (!this.#heard) return create();
    this.#heard.afterHearing(create, (err) => this.#sendError(err, eventId), byClient);
  }

  #onAudioAppend(event: ClientEventOf<'input_audio_buffer.append'>): void {
    this.#voice.push(this.#inputAudio.append(event.audio));
    this.#prefill.turnAudio();
  }

  /** `clipEndMs` (server_vad): the item keeps the buffer up to there on the VAD's timeline; the rest is dropped. */
  #onAudioCommit(itemId = newId('item'), clipEndMs?: number): void {
    const media = this.#inputAudio.take(clipEndMs);
    this.#prefill.turnEnded();
    this.#input.commitAudio(media, itemId);
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
    this.#writer.send(errorEvent(e, eventId, err instanceof ClientInputError ? err.param : null));
  }

  /**
   * A socket that closes mid-response cancels its request; nothing of the session outlives the socket (a resumable
   * one: its resume window).
   */
  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#idle.stop();
    this.#writer.end(); // before the responses: a response ending now has no one to send its response.done to
    this.#responses.close();
    this.#voice.close();
    this.#heard?.close();
    this.#transcription.close();
    this.#ctx.turnSpans?.close();
    this.#prefill.close();
    this.#camera.close();
    this.#deferredFrames.clear();
    this.#inputAudio.clear();
    this.#ctx.log.debug({ sessionId: this.id }, 'realtime session closed');
    this.#ctx.onClosed();
  }
}
