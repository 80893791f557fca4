/**
 * Every event the Realtime endpoint sends, as one discriminated union (OpenAI Realtime GA names and fields; the
 * Chorus extensions are marked), one interface per event type; the resources they carry are in SessionResource.ts,
 * ItemResource.ts and ResponseResource.ts. Builders and the socket writer take a ServerEvent,
 * so a misspelt field or an event type no lane handles is a compile error, not a client surprise; and
 * test/types/realtimeServerEvents.ts checks every event against the openai SDK's type of the same name.
 */
import type { ItemResource, OutputItemResource, StoredItemResource } from './ItemResource.ts';
import type { ContentPartResource, ResponseResource } from './ResponseResource.ts';
import type { SessionResource } from './SessionResource.ts';

/** What every server event carries. */
interface EventBase<T extends string> {
  readonly type: T;
  readonly event_id: string;
}

/** Where a content event belongs: the response, its one item, and the part. */
interface ContentRef {
  readonly response_id: string;
  readonly item_id: string;
  readonly output_index: number;
  readonly content_index: number;
}

export interface SessionCreatedEvent extends EventBase<'session.created'> {
  readonly session: SessionResource;
}

export interface SessionUpdatedEvent extends EventBase<'session.updated'> {
  readonly session: SessionResource;
}

export interface ConversationItemAddedEvent extends EventBase<'conversation.item.added'> {
  readonly previous_item_id: string | null;
  readonly item: ItemResource;
}

export interface ConversationItemDoneEvent extends EventBase<'conversation.item.done'> {
  readonly previous_item_id: string | null;
  readonly item: ItemResource;
}

export interface ConversationItemDeletedEvent extends EventBase<'conversation.item.deleted'> {
  readonly item_id: string;
}

/** The answer to conversation.item.retrieve: the item with its media. */
export interface ConversationItemRetrievedEvent extends EventBase<'conversation.item.retrieved'> {
  readonly item: StoredItemResource;
}

export interface InputAudioBufferCommittedEvent extends EventBase<'input_audio_buffer.committed'> {
  readonly previous_item_id: string | null;
  readonly item_id: string;
}

/** A committed user audio item's transcript as it is made (off the answer's path: it may follow the answer). */
type TranscriptionEvent<K extends string> = EventBase<`conversation.item.input_audio_transcription.${K}`>;

export interface InputAudioTranscriptionDeltaEvent extends TranscriptionEvent<'delta'> {
  readonly item_id: string;
  readonly content_index: number;
  readonly delta: string;
}

export interface InputAudioTranscriptionCompletedEvent extends TranscriptionEvent<'completed'> {
  readonly item_id: string;
  readonly content_index: number;
  readonly transcript: string;
  /** The audio's length: what a duration-billed transcription counts. */
  readonly usage: { readonly type: 'duration'; readonly seconds: number };
}

/** No transcript for the item (the answer is not affected): error.code is a CHORUS_ERR_* code. */
export interface InputAudioTranscriptionFailedEvent extends TranscriptionEvent<'failed'> {
  readonly item_id: string;
  readonly content_index: number;
  readonly error: { readonly type: string; readonly code: string; readonly message: string };
}

export type InputAudioBufferClearedEvent = EventBase<'input_audio_buffer.cleared'>;

/** Server VAD heard speech begin; item_id names the user item the turn will be committed as. */
export interface InputAudioBufferSpeechStartedEvent extends EventBase<'input_audio_buffer.speech_started'> {
  readonly audio_start_ms: number;
  readonly item_id: string;
}

export interface InputAudioBufferSpeechStoppedEvent extends EventBase<'input_audio_buffer.speech_stopped'> {
  readonly audio_end_ms: number;
  readonly item_id: string;
}

/** idle_timeout_ms passed without speech: the silent stretch is committed and answered. */
export interface InputAudioBufferTimeoutTriggeredEvent extends EventBase<'input_audio_buffer.timeout_triggered'> {
  readonly audio_start_ms: number;
  readonly audio_end_ms: number;
  readonly item_id: string;
}

export interface ConversationItemTruncatedEvent extends EventBase<'conversation.item.truncated'> {
  readonly item_id: string;
  readonly content_index: number;
  readonly audio_end_ms: number;
}

export interface ResponseCreatedEvent extends EventBase<'response.created'> {
  readonly response: ResponseResource;
}

export interface ResponseOutputItemAddedEvent extends EventBase<'response.output_item.added'> {
  readonly response_id: string;
  readonly output_index: number;
  readonly item: OutputItemResource;
}

/** A fragment of a call's arguments JSON, as it is generated. */
export interface ResponseFunctionCallArgumentsDeltaEvent extends EventBase<'response.function_call_arguments.delta'> {
  readonly response_id: string;
  readonly item_id: string;
  readonly output_index: number;
  readonly call_id: string;
  readonly delta: string;
}

export interface ResponseFunctionCallArgumentsDoneEvent extends EventBase<'response.function_call_arguments.done'> {
  readonly response_id: string;
  readonly item_id: string;
  readonly output_index: number;
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
}

export interface ResponseContentPartAddedEvent extends EventBase<'response.content_part.added'>, ContentRef {
  readonly part: ContentPartResource;
}

export interface ResponseOutputTextDeltaEvent extends EventBase<'response.output_text.delta'>, ContentRef {
  readonly delta: string;
}

export interface ResponseOutputTextDoneEvent extends EventBase<'response.output_text.done'>, ContentRef {
  readonly text: string;
}

export interface ResponseOutputAudioTranscriptDeltaEvent
  extends EventBase<'response.output_audio_transcript.delta'>, ContentRef {
  readonly delta: string;
}

export interface ResponseOutputAudioTranscriptDoneEvent
  extends EventBase<'response.output_audio_transcript.done'>, ContentRef {
  readonly transcript: string;
}

/** `delta` is base64 of pcm16 at the session's output rate. */
export interface ResponseOutputAudioDeltaEvent extends EventBase<'response.output_audio.delta'>, ContentRef {
  readonly delta: string;
}

export interface ResponseOutputAudioDoneEvent extends EventBase<'response.output_audio.done'>, ContentRef {}

export interface ResponseContentPartDoneEvent extends EventBase<'response.content_part.done'>, ContentRef {
  readonly part: ContentPartResource;
}

export interface ResponseOutputItemDoneEvent extends EventBase<'response.output_item.done'> {
  readonly response_id: string;
  readonly output_index: number;
  readonly item: OutputItemResource;
}

export interface ResponseDoneEvent extends EventBase<'response.done'> {
  readonly response: ResponseResource;
}

export interface ErrorEvent extends EventBase<'error'> {
  readonly error: {
    readonly type: string;
    readonly code: string;
    readonly message: string;
    readonly param: string | null;
    /** The client event this answers, when it could be read. */
    readonly event_id: string | null;
  };
}

/** Chorus extension (docs/realtime-resume.md): the session is resumable with this token, from now on. */
export interface SessionResumeEnabledEvent extends EventBase<'session.resume.enabled'> {
  readonly resume_token: string;
  /** How long the session waits for its client after the socket drops. */
  readonly window_ms: number;
  /** Bytes of sent events kept for replay. */
  readonly buffer_bytes: number;
}

/** Chorus extension: this connection now carries the resumed session; the events after last_seq follow. */
export interface SessionResumedEvent extends EventBase<'session.resumed'> {
  readonly session: SessionResource;
  readonly last_seq: number;
  /** Events replayed right after this one. */
  readonly replayed: number;
}

/** The events OpenAI does not define (test/types/realtimeServerEvents.ts checks the rest against its SDK). */
export type ChorusExtensionEvent = SessionResumeEnabledEvent | SessionResumedEvent;

export type ServerEvent =
  | ChorusExtensionEvent
  | SessionCreatedEvent
  | SessionUpdatedEvent
  | ConversationItemAddedEvent
  | ConversationItemDoneEvent
  | ConversationItemDeletedEvent
  | ConversationItemRetrievedEvent
  | InputAudioBufferCommittedEvent
  | InputAudioBufferClearedEvent
  | InputAudioBufferSpeechStartedEvent
  | InputAudioBufferSpeechStoppedEvent
  | InputAudioBufferTimeoutTriggeredEvent
  | ConversationItemTruncatedEvent
  | ResponseCreatedEvent
  | InputAudioTranscriptionDeltaEvent
  | InputAudioTranscriptionCompletedEvent
  | InputAudioTranscriptionFailedEvent
  | ResponseOutputItemAddedEvent
  | ResponseContentPartAddedEvent
  | ResponseOutputTextDeltaEvent
  | ResponseOutputTextDoneEvent
  | ResponseOutputAudioTranscriptDeltaEvent
  | ResponseOutputAudioTranscriptDoneEvent
  | ResponseOutputAudioDeltaEvent
  | ResponseOutputAudioDoneEvent
  | ResponseContentPartDoneEvent
  | ResponseOutputItemDoneEvent
  | ResponseFunctionCallArgumentsDeltaEvent
  | ResponseFunctionCallArgumentsDoneEvent
  | ResponseDoneEvent
  | ErrorEvent;

export type ServerEventType = ServerEvent['type'];

/**
 * The event as the client receives it: its JSON text. An audio delta's `delta` is base64 (pcm16ToBase64: letters,
 * digits, '+', '/', '='), which JSON never escapes, so it is written as it is around the other fields' JSON:
 * JSON.stringify would scan every byte of it for characters to escape, and the audio deltas are nearly all of a
 * response's bytes (issue 46). The text is the same as JSON.stringify's, field for field.
 */
export function eventJson(event: ServerEvent): string {
  if (event.type !== 'response.output_audio.delta') return JSON.stringify(event);
  const { delta, ...fields } = event;
  return `${JSON.stringify(fields).slice(0, -1)},"delta":"${delta}"}`;
}

/**
 * Which lane of the socket an event takes (SocketWriter): `text` goes to the socket at once; `audio` queues behind
 * the audio already queued, because a client must see it after that audio (an item's done after its last delta).
 * A user item's events have no audio to wait for.
 */
export function laneOf(event: ServerEvent): 'text' | 'audio' {
  switch (event.type) {
    case 'conversation.item.added':
      return event.item.type === 'function_call' ? 'audio' : 'text';
    case 'session.created':
    case 'session.updated':
    case 'session.resume.enabled':
    case 'session.resumed':
    case 'conversation.item.deleted':
    case 'conversation.item.retrieved':
    case 'input_audio_buffer.committed':
    case 'input_audio_buffer.cleared':
    case 'input_audio_buffer.speech_started':
    case 'input_audio_buffer.speech_stopped':
    case 'input_audio_buffer.timeout_triggered':
    case 'conversation.item.input_audio_transcription.delta':
    case 'conversation.item.input_audio_transcription.completed':
    case 'conversation.item.input_audio_transcription.failed':
    case 'conversation.item.truncated':
    case 'response.created':
    case 'response.content_part.added':
    case 'response.output_text.delta':
    case 'response.output_text.done':
    case 'response.output_audio_transcript.delta':
    case 'response.output_audio_transcript.done':
    case 'error':
      return 'text';
    case 'conversation.item.done':
      // An answer's items (its message, its calls) end after its audio; a user item has none to wait for.
      return event.item.type === 'function_call' || ('role' in event.item && event.item.role === 'assistant')
        ? 'audio'
        : 'text';
    // A call's events follow the audio of the message before it (a call is never spoken).
    case 'response.function_call_arguments.delta':
    case 'response.function_call_arguments.done':
      return 'audio';
    case 'response.output_item.added':
      return event.item.type === 'function_call' ? 'audio' : 'text';
    case 'response.output_audio.delta':
    case 'response.output_audio.done':
    case 'response.content_part.done':
    case 'response.output_item.done':
    case 'response.done':
      return 'audio';
    default: {
      const unhandled: never = event;
      throw new Error(`no lane for server event ${JSON.stringify(unhandled)}`);
    }
  }
}
