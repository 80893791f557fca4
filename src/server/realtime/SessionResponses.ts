/**
 * The response lifecycle of one Realtime session: at most one active response (ResponseStream), the answer held
 * since a voice turn's first silence (HeldAnswer), and what each response leaves in the conversation when it
 * finishes or fails on media; what becomes of the items afterwards (the client's truncations, deletions and playback
 * acks, the items session.truncation drops to fit the Thinker) is AnswerEdits'. RealtimeSession dispatches the client
 * events; this owns everything from response.create to the response's finish.
 */
import { of } from 'rxjs';
import type { ChatMessage, Engine, RequestHandle } from '../../common/engine.ts';
import { ChorusError, ErrorCodes, serializeError } from '../../common/errors.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { TokenLimits } from '../generationParams.ts';
import type { ResolvedServerOptions } from '../options.ts';
import { renameError } from '../media/itemNames.ts';
import type { MediaChecker } from '../media/MediaChecker.ts';
import { serverMetrics } from '../metrics/metrics.ts';
import type { RequestQueue } from '../admission/RequestQueue.ts';
import { ClientInputError } from '../validate.ts';
import type { ClientEventOf, ResponseFields } from './clientEvents.ts';
import type { Conversation } from './Conversation.ts';
import { HeldAnswer } from './HeldAnswer.ts';
import type { InputAudio } from './InputAudio.ts';
import { planResponse, type PlanContext, type ResponsePlan } from './responsePlan.ts';
import { PromptPositions } from './PromptPositions.ts';
import type { StoredItem } from './Conversation.ts';
import { ResponseStream } from './ResponseStream.ts';
import { newId, type SessionState } from './serverEvents.ts';
import type { SocketWriter } from './SocketWriter.ts';
import { AnswerEdits } from './AnswerEdits.ts';
import { TruncationAhead } from './TruncationAhead.ts';
import type { PrefillSlots } from '../../voice/index.ts';
import { packetMark, PERF_TO_MONOTONIC_MS } from '../../common/packetMarks.ts';

/** What the responses need of the server (RealtimeSession's SessionContext adds the session-wide rest). */
export interface ResponseContext {
  readonly engine: Engine;
  readonly options: ResolvedServerOptions;
  /** Of the pipeline's vocoder (its READY facts); null when the pipeline returns no audio. */
  readonly samplesPerFrame: number | null;
  readonly tokenLimits: TokenLimits;
  /** Checks media in items against the pipeline (an encoder for it, sound headers) when they are created. */
  readonly media: MediaChecker;
  /** Admission into the engine: a response.create takes a slot or is refused (CHORUS_ERR_RATE_LIMITED). */
  readonly queue: RequestQueue;
  readonly log: FastifyBaseLogger;
  /** Prefills in flight across the server (voice prefills, truncation warm-ups): work that only saves time. */
  readonly prefills: PrefillSlots;
}

/** The session's parts the responses read and write; all owned by RealtimeSession. */
export interface ResponseSessionParts {
  readonly sessionId: string;
  readonly writer: SocketWriter;
  readonly state: SessionState;
  readonly conversation: Conversation;
  readonly inputAudio: InputAudio;
  /** The voice prefill's prefix key, when the session prefills turns (responses reuse its cached tokens). */
  readonly prefixKey: () => string | undefined;
}

/** A response.create being started: what it asked, its plan, and the item its reply goes into. */
interface NewReply {
  readonly fields: ResponseFields;
  readonly plan: ResponsePlan;
  readonly itemId: string;
  readonly previousItemId: string | null;
  /** False for an answer that is calls only (tool_choice required or a name): it has no message item. */
  readonly withMessage: boolean;
}

export class SessionResponses {
  readonly #ctx: ResponseContext;
  readonly #session: ResponseSessionParts;
  readonly #conversationId = newId('conv');
  #active: ResponseStream | null = null;
  /** With server_vad: the answer started at the first silence of the turn, held until speech_stopped (HeldAnswer). */
  #held: HeldAnswer | null = null;
  /** Truncations, deletions, playback acks: what becomes of the items once the answers are said. */
  readonly #edits: AnswerEdits;
  /** Counts prompt positions for truncation, for the engine's graph now (null: the engine cannot count). */
  #positions: PromptPositions | null = null;
  /** The next turn's truncation, made between turns with its prompt warmed in the caches (TruncationAhead). */
  readonly #ahead: TruncationAhead;
  #closed = false;
  /** Waiting for the active response's first audio (or its end): afterFirstAudio. */
  #firstAudioWaiters: (() => void)[] = [];

  constructor(ctx: ResponseContext, session: ResponseSessionParts) {
    this.#ctx = ctx;
    this.#session = session;
    this.#ahead = new TruncationAhead(ctx.engine, ctx.prefills, ctx.log, session.sessionId);
    const { sessionId, writer, conversation } = session;
    this.#edits = new AnswerEdits({
      sessionId,
      writer,
      conversation,
      engine: ctx.engine,
      log: ctx.log,
      active: () => this.#active,
    });
  }

  /** The response running (or finished with its response.done not yet out), if any. */
  get active(): ResponseStream | null {
    return this.#active;
  }

  /** A voice turn's answer is held (HeldAnswer): it is sent at speech_stopped if the prompt is still its own. */
  get holding(): boolean {
    return this.#held !== null;
  }

  /** No response running and none held: a turn's prefill cannot compete with answer work. */
  get idle(): boolean {
    return !this.#active && !this.#held;
  }

  /**
   * The VAD heard the silence that may end the turn: the answer a speech_stopped now would get starts, held
   * (HeldAnswer), from the audio up to `clipEndMs` (what the commit will keep). One at a time; never with a response
   * running, without a free admission slot, or when the server turns it off.
   */
  speculate(clipEndMs: number): void {
    if (!this.#ctx.options.speculativeVoiceAnswers || this.#held || this.#active || this.#closed) return;
    const { inputAudio } = this.#session;
    const pending = inputAudio.pendingItem(inputAudio.bytesUntil(clipEndMs));
    if (!pending) return;
    // An answer the server could not start in time is not started early either (its adoption skips the check).
    const wantsAudio = this.#session.state.outputModalities.includes('audio');
    if (this.#ctx.queue.latencyRefusal(wantsAudio, false)) return;
    const releaseSlot = this.#ctx.queue.tryAcquire();
    if (!releaseSlot) return;
    try {
      const plan = planResponse({}, this.#planContext(), pending);
      if (plan.failure) return releaseSlot(); // the answer at speech_stopped fails with it, at no engine cost
      this.#held = HeldAnswer.start((req) => this.#ctx.engine.generate(req), plan.request(newId('resp')), releaseSlot);
    } catch (err) {
      // The answer at speech_stopped will meet the same problem and report it; a held answer only saves time.
      releaseSlot();
      this.#ctx.log.debug({ err, sessionId: this.#session.sessionId }, 'speculative voice answer not started');
    }
  }

  /**
   * Resolves once the response running now has its first audio out or has ended (at once when none runs): work
   * beside the answer (input transcription) starts then, off the answer's critical path.
   */
  afterFirstAudio(): Promise<void> {
    if (!this.#active || this.#active.finished) return Promise.resolve();
    return new Promise((resolve) => this.#firstAudioWaiters.push(resolve));
  }

  #releaseFirstAudioWaiters(): void {
    for (const resolve of this.#firstAudioWaiters.splice(0)) resolve();
  }

  dropHeld(): void {
    this.#held?.discard();
    this.#held = null;
  }

  #planContext(): PlanContext {
    const { media, tokenLimits, engine } = this.#ctx;
    const { state, conversation, prefixKey } = this.#session;
    this.#positions = PromptPositions.of(engine, this.#positions);
    return {
      state,
      items: conversation.items(),
      media,
      tokenLimits,
      prefixKey: prefixKey(),
      positions: this.#positions,
    };
  }

  /**
   * The messages the answer to the turn being spoken would get if it ended now with `pending` (the voice prefill;
   * without it, the answer to the conversation as it is: a camera frame's prefill):
   * planned as that answer will be, truncation included, so the prefilled prompt is the answer's. Null when the
   * answer could not start (it will report why).
   */
  turnSoFar(pending?: StoredItem): readonly ChatMessage[] | null {
    try {
      const plan = planResponse({}, this.#planContext(), pending);
      return plan.failure ? null : plan.rendered.messages;
    } catch {
      return null;
    }
  }

  /** frameAtMs: the response.create frame's arrival (monotonic; 0 unknown), a mark of the bench's account. */
  create(event: ClientEventOf<'response.create'>, turnEndedAtMs: number | null = null, frameAtMs = 0): void {
    const startedAtMs = performance.now();
    if (this.#active) {
      throw new ClientInputError(
        `response ${this.#active.id} is still in progress: cancel it or wait for its response.done`,
        null,
        ErrorCodes.RESPONSE_ACTIVE,
      );
    }
    this.#ahead.stop(); // what the warm-up computed stays in the caches for this turn
    this.settlePlayback();
    const fields = event.response ?? {};
    const plan = planResponse(fields, this.#planContext());
    if (!plan.rendered.messages.some((m) => m.role !== 'system')) {
      throw new ClientInputError('nothing to respond to: add a user message with conversation.item.create first');
    }
    const reply = this.#placeReply(fields, plan);
    const { adopt, releaseSlot } = this.#admit(reply);
    const responseId = adopt ? adopt.requestId : newId('resp');
    if (frameAtMs > 0) packetMark(responseId, 'frame', frameAtMs);
    packetMark(responseId, 'create', startedAtMs + PERF_TO_MONOTONIC_MS);
    const handle = this.#generate(reply, responseId, adopt, releaseSlot);
    // The response is on: the items truncation left out of its prompt leave the conversation now. An out-of-band
    // response (conversation: "none") reads a truncated view and leaves the conversation as it is.
    if (plan.inConversation) this.#edits.forget(plan.truncated);
    // A held answer's slot was taken at the turn's first silence: its first audio says nothing of the running limit.
    const learns = !adopt && plan.audio;
    const stream = this.#stream(reply, handle, releaseSlot, { responseId, startedAtMs, turnEndedAtMs, learns });
    this.#active = stream;
    this.#ctx.log.debug(
      { responseId, outputModalities: plan.outputModalities, held: adopt !== null },
      'response started',
    );
    stream.start();
  }

  /** The reply's item is placed first: if the conversation is full this throws before any work starts. */
  #placeReply(fields: ResponseFields, plan: ResponsePlan): NewReply {
    const { conversation } = this.#session;
    // An answer that is calls only (tool_choice required or a name) has no message item.
    const withMessage = !plan.calls.forced;
    const itemId = newId('item');
    const previousItemId = plan.inConversation ? conversation.lastItemId : null;
    if (plan.inConversation && withMessage) conversation.insert({ id: itemId, role: 'assistant', parts: [] });
    return { fields, plan, itemId, previousItemId, withMessage };
  }

  /** The reply's item leaves again: its response was refused before it started. */
  #unplaceReply(reply: NewReply): void {
    if (reply.plan.inConversation) this.#session.conversation.remove(reply.itemId);
  }

  /**
   * The answer held since the turn's first silence, if it is this very request (else it goes, unheard), or an
   * admission slot; refused (the reply's item removed), the client hears why at once.
   */
  #admit(reply: NewReply): { adopt: HeldAnswer | null; releaseSlot: () => void } {
    const { plan } = reply;
    const held = this.#held;
    this.#held = null;
    const adopt = !plan.failure && held?.matches(plan.request(held.requestId)) ? held : null;
    if (!adopt) held?.discard();
    // A Realtime response does not wait in line: the client hears at once (an error event; the session stays open).
    // A held answer brings the slot it took; one that cannot fit the Thinker needs none (it never reaches the engine).
    // Beyond the graph's admission bounds it is refused as a full server is: an error event saying when to retry.
    const late = plan.failure || adopt ? null : this.#ctx.queue.latencyRefusal(plan.audio, false);
    if (late) {
      this.#unplaceReply(reply);
      serverMetrics.latencyRefusals.inc();
      throw late;
    }
    const releaseSlot = plan.failure ? () => {} : adopt ? adopt.releaseSlot : this.#ctx.queue.tryAcquire(plan.audio);
    if (!releaseSlot) {
      this.#unplaceReply(reply);
      throw new ChorusError(
        ErrorCodes.RATE_LIMITED,
        `the server is busy (${this.#ctx.queue.running} responses running): send response.create again in ` +
          `${this.#ctx.queue.busyRetryAfterSeconds} s`,
      );
    }
    return { adopt, releaseSlot };
  }

  /** The engine's request for the reply (the held one adopted, or a new one; a plan that failed: a refused one). */
  #generate(reply: NewReply, responseId: string, adopt: HeldAnswer | null, releaseSlot: () => void): RequestHandle {
    const { plan } = reply;
    if (plan.failure) return refusedHandle(responseId, plan.failure);
    try {
      return adopt ? adopt.adopt() : this.#ctx.engine.generate(plan.request(responseId));
    } catch (err) {
      const renamed = renameError(err, plan.rendered.itemNamer);
      // A prompt over the Thinker's positions (found when the engine built it) fails its response, with its
      // response.done, as the Thinker's own refusal does: a voice turn's client waits for that, never for an error.
      if (!(renamed instanceof ChorusError && renamed.code === ErrorCodes.CONTEXT_LENGTH_EXCEEDED)) {
        releaseSlot();
        this.#unplaceReply(reply);
        throw renamed;
      }
      return refusedHandle(responseId, renamed);
    }
  }

  #stream(
    reply: NewReply,
    handle: RequestHandle,
    releaseSlot: () => void,
    at: { responseId: string; startedAtMs: number; turnEndedAtMs: number | null; learns: boolean },
  ): ResponseStream {
    const { fields, plan, itemId } = reply;
    const { inConversation, calls } = plan;
    const { conversation, writer, state } = this.#session;
    return new ResponseStream({
      writer,
      handle,
      inConversation,
      previousItemId: reply.previousItemId,
      startedAtMs: at.startedAtMs,
      turnEndedAtMs: at.turnEndedAtMs,
      samplesPerFrame: this.#ctx.samplesPerFrame,
      itemNamer: plan.rendered.itemNamer,
      log: this.#ctx.log,
      clientStallTimeoutMs: this.#ctx.options.clientStallTimeoutMs,
      maxStreamBufferBytes: this.#ctx.options.maxStreamBufferBytes,
      // Its client stopped reading and its request is gone from the engine: the admission slot goes now, not when
      // the client reads the response.done (if it ever does), so stalled clients cannot hold every slot.
      onStalled: releaseSlot,
      onUnderrun: at.learns ? () => this.#ctx.queue.underran(releaseSlot) : undefined,
      onFirstAudio: () => {
        if (at.learns) this.#ctx.queue.firstPacket(releaseSlot); // admission's running limit (RunningLimit.ts)
        this.#releaseFirstAudioWaiters();
        if (inConversation) this.#ahead.plan(this.#planContext());
      },
      tools: calls.grammar
        ? {
            forced: calls.forced,
            addItem: (item) => conversation.insert(item),
            removeItem: (id) => conversation.remove(id),
          }
        : null,
      state: {
        id: at.responseId,
        conversationId: inConversation ? this.#conversationId : null,
        outputModalities: plan.outputModalities,
        voice: fields.audio?.output?.voice ?? state.voice,
        maxOutputTokens: plan.maxOutputTokens,
        item: { id: itemId, audio: plan.audio, status: 'in_progress', text: '' },
        status: 'in_progress',
        statusDetails: null,
        usage: null,
        warnings: null,
        metadata: plan.metadata,
      },
      onFinished: (stream) => {
        releaseSlot();
        this.#finished(reply, stream);
      },
    });
  }

  /** response.done has been handed to the socket: the reply is recorded for later turns, the next one accepted. */
  #finished(reply: NewReply, s: ResponseStream): void {
    const { plan, itemId, withMessage } = reply;
    const { inConversation, audio } = plan;
    this.#releaseFirstAudioWaiters();
    const text = this.#edits.finished(itemId, s.text, inConversation && audio ? s.spoken : null);
    if (inConversation && withMessage) this.#session.conversation.setText(itemId, text, audio);
    // The items the next turn's truncation would drop go now, while nothing waits for them (TruncationAhead).
    const dropAhead = this.#ahead.takeDrop();
    if (inConversation && !this.#closed) this.#edits.forget(dropAhead);
    if (this.#active === s) this.#active = null;
    if (!reply.fields.input && !this.#closed) this.#edits.dropUndecodableItem(s.failure, plan.rendered.itemIds);
  }

  cancel(event: ClientEventOf<'response.cancel'>): void {
    const active = this.#active;
    if (!active || (event.response_id !== undefined && event.response_id !== active.id)) {
      const which = event.response_id ?? 'in progress';
      throw new ClientInputError(`no response ${which} to cancel`, 'response_id', ErrorCodes.NO_ACTIVE_RESPONSE);
    }
    // A response whose generation already ended is only flushing its tail: its response.done is on the way
    // and answers the client, so cancelling it is a no-op rather than an error.
    if (!active.finished) active.cancel();
  }

  /** conversation.item.truncate (AnswerEdits). */
  truncate(event: ClientEventOf<'conversation.item.truncate'>): void {
    this.#edits.truncate(event);
  }

  /** conversation.item.delete (AnswerEdits): the item a response is still writing cannot go. */
  deleteItem(event: ClientEventOf<'conversation.item.delete'>): void {
    this.#edits.deleteItem(event);
  }

  /** output_audio.playback_ack (AnswerEdits): recorded, applied when the next turn begins. */
  playbackAck(event: ClientEventOf<'output_audio.playback_ack'>): void {
    this.#edits.playbackAck(event);
  }

  /** A new turn begins: answers acked short of their end keep what was heard (AnswerEdits). */
  settlePlayback(): void {
    this.#edits.settlePlayback();
  }

  /** The socket closed: the running response is cancelled and the held one dropped; nothing starts after this. */
  close(): void {
    this.#closed = true;
    this.#ahead.stop();
    this.#active?.cancel();
    // A response that had finished but whose response.done was still queued: its slot and its text go now.
    this.#active?.abandon();
    this.#active = null;
    this.dropHeld();
    this.#releaseFirstAudioWaiters();
  }
}

/** A response that fails before the engine sees it: its stream is its done(error), so it ends as any failure does. */
function refusedHandle(requestId: string, error: ChorusError): RequestHandle {
  const prompt = { text: 0, audio: 0, image: 0, video: 0 };
  const usage = { promptTokens: 0, promptTokenDetails: prompt, completionTokens: 0, audioFrames: 0, audioSeconds: 0 };
  const noop = () => {};
  return {
    requestId,
    prompt,
    events: of({ type: 'done', finishReason: 'error', error: serializeError(error), usage, atMs: Date.now() } as const),
    cancel: noop,
    pause: noop,
    resume: noop,
  };
}
