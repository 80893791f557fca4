/**
 * Every event the Realtime endpoint sends, as one discriminated union (OpenAI Realtime GA names and fields; the
 * Chorus extensions are marked), one interface per event type. Builders and the socket writer take a ServerEvent,
 * so a misspelt field or an event type no lane handles is a compile error, not a client surprise; and
 * test/types/realtimeServerEvents.ts checks every event against the openai SDK's type of the same name.
 */
import type { RealtimeTool, RealtimeToolChoice } from './realtimeTools.ts';
import type { GenerationFields } from '../generationParams.ts';
import type { TruncationSetting } from './planTruncation.ts';
import type { TracingSetting } from './sessionTracing.ts';

/** The only audio format Chorus speaks, both ways: pcm16 mono at 24 kHz. */
export interface AudioFormat {
  readonly type: 'audio/pcm';
  readonly rate: 24000;
}

export type SessionResource = {
  readonly type: 'realtime';
  readonly object: 'realtime.session';
  readonly id: string;
  readonly model: string;
  readonly output_modalities: readonly ('text' | 'audio')[];
  readonly instructions: string;
  readonly max_output_tokens: number | 'inf';
  readonly audio: {
    readonly input: {
      readonly format: AudioFormat;
      readonly turn_detection: TurnDetectionResource | null;
      /** Left out while off (the SDK types it optional, not nullable). */
      readonly transcription?: TranscriptionResource;
    };
    readonly output: { readonly format: AudioFormat; readonly voice: string | { readonly id: string } };
  };
  readonly truncation: TruncationSetting;
  /** session.tracing as set (sessionTracing.ts); chorus_tracing (extension): whether the server records it. */
  readonly tracing: TracingSetting;
  readonly chorus_tracing: string;
  readonly tools: readonly RealtimeTool[];
  readonly tool_choice: RealtimeToolChoice;
} & GenerationFields; // Chorus extensions in effect, echoed

/** Input audio transcription in effect (transcriptionSetting.ts): the model named as the client named it. */
export interface TranscriptionResource {
  readonly model: string;
  readonly language?: string;
  readonly prompt?: string;
  /** Chorus extension: what transcribes the audio, whatever model the client named (OpenAI's names map onto it). */
  readonly chorus_transcriber: string;
}

/** Turn detection in effect: server_vad (Silero's silence rule) or semantic_vad (an end-of-turn model). */
export type TurnDetectionResource = ServerVadResource | SemanticVadResource;

export type Eagerness = 'low' | 'medium' | 'high' | 'auto';

/** semantic_vad with every parameter in effect (OpenAI's fields), and how Chorus decides a turn's end. */
export interface SemanticVadResource {
  readonly type: 'semantic_vad';
  readonly eagerness: Eagerness;
  readonly create_response: boolean;
  readonly interrupt_response: boolean;
  /** Chorus extension: the model and thresholds eagerness maps onto, or the silence rule it fell back to. */
  readonly chorus_end_of_turn: EndOfTurnResource;
}

export type EndOfTurnResource =
  | {
      readonly model: 'smart-turn-v3';
      /** The turn ends when the model's P(complete) reaches this, after probe_silence_ms of silence... */
      readonly threshold: number;
      readonly probe_silence_ms: number;
      /** ...or, whatever it says, after this much silence. */
      readonly max_silence_ms: number;
    }
  | {
      readonly model: null;
      /** No end-of-turn model (YAML realtime.semantic_vad.fallback: silence): server_vad's rule. */
      readonly silence_duration_ms: number;
      readonly reason: string;
    };

/** server_vad with every parameter in effect. */
export interface ServerVadResource {
  readonly type: 'server_vad';
  readonly threshold: number;
  readonly prefix_padding_ms: number;
  readonly silence_duration_ms: number;
  readonly create_response: boolean;
  readonly interrupt_response: boolean;
  readonly idle_timeout_ms: number | null;
}

/** The content of an assistant item Chorus generates: its text, or the transcript of its audio. */
export type AssistantContent =
  | { readonly type: 'output_audio'; readonly transcript: string }
  | { readonly type: 'output_text'; readonly text: string };

/**
 * The content of a conversation item as stored: media bytes are left out of the events that announce an item, and
 * sent only when the client asks for the item (conversation.item.retrieve), as OpenAI does. The types are the
 * client's, so they include the beta `text`; an input_audio's transcript is null when none was given (OpenAI sends
 * null on the wire, where its SDK types say string); an answer's item keeps its audio's transcript, not its audio.
 */
export type EchoedContent =
  | { readonly type: 'input_text' | 'text' | 'output_text'; readonly text: string }
  | { readonly type: 'output_audio'; readonly transcript: string }
  | {
      readonly type: 'input_audio';
      readonly transcript: string | null;
      /** Retrieved items only: base64 of the audio as it was given (pcm16, or the WAV file). */
      readonly audio?: string;
      /** Chorus extension, retrieved items only: present when `audio` holds a WAV file. */
      readonly format?: 'wav';
    }
  | {
      readonly type: 'input_image';
      /** Retrieved items only: a data: URL of the image. */
      readonly image_url?: string;
    };

interface ItemBase {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'message';
  readonly status: 'in_progress' | 'completed' | 'incomplete';
}

/** The item a response produces (response.output_item.*, and conversation.item.* when it joins the conversation). */
export interface AssistantItemResource extends ItemBase {
  readonly role: 'assistant';
  readonly content: readonly AssistantContent[];
}

/** An item from conversation.item.create or input_audio_buffer.commit. */
export interface EchoedItemResource extends ItemBase {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: readonly EchoedContent[];
}

/** A call the model made (function tools, realtimeTools.ts); arguments are the JSON text generated so far. */
export interface FunctionCallItemResource {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'function_call';
  readonly status: 'in_progress' | 'completed' | 'incomplete';
  readonly call_id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The client's result of a call. */
export interface FunctionCallOutputItemResource {
  readonly id: string;
  readonly object: 'realtime.item';
  readonly type: 'function_call_output';
  readonly status: 'completed';
  readonly call_id: string;
  readonly output: string;
}

/** An item as the conversation holds it (conversation.item.create, a commit, a call). */
export type StoredItemResource = EchoedItemResource | FunctionCallItemResource | FunctionCallOutputItemResource;

/** What a response outputs: its message, and the calls it made. */
export type OutputItemResource = AssistantItemResource | FunctionCallItemResource;

export type ItemResource =
  AssistantItemResource | EchoedItemResource | FunctionCallItemResource | FunctionCallOutputItemResource;

export interface UsageResource {
  readonly total_tokens: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly input_token_details: {
    readonly text_tokens: number;
    readonly audio_tokens: number;
    readonly image_tokens: number;
    readonly cached_tokens: number;
  };
  readonly output_token_details: { readonly text_tokens: number; readonly audio_tokens: number };
  /** Chorus extension: seconds of audio generated. */
  readonly audio_seconds: number;
}

export type ResponseStatusDetails =
  | { readonly type: 'incomplete'; readonly reason: 'max_output_tokens' }
  | { readonly type: 'cancelled'; readonly reason: 'client_cancelled' | 'turn_detected' }
  | {
      readonly type: 'failed';
      /** `message` is a Chorus extension: what went wrong, with the item named when it was a media item. */
      readonly error: { readonly type: string; readonly code: string; readonly message: string };
    };

/**
 * status_details, conversation_id and usage are left out when there is none (a response in progress, an out-of-band
 * one, one without usage yet): the openai SDK types them optional but not nullable, so a null there is a value its
 * users' code is not written for (`if (r.usage !== undefined) r.usage.total_tokens` throws on null).
 */
export interface ResponseResource {
  readonly id: string;
  readonly object: 'realtime.response';
  readonly status: 'in_progress' | 'completed' | 'cancelled' | 'failed' | 'incomplete';
  readonly status_details?: ResponseStatusDetails;
  readonly output: readonly OutputItemResource[];
  readonly conversation_id?: string;
  readonly output_modalities: readonly ('text' | 'audio')[];
  readonly max_output_tokens: number | 'inf';
  readonly audio: {
    readonly output: { readonly format: AudioFormat; readonly voice: string | { readonly id: string } };
  };
  readonly usage?: UsageResource;
  readonly metadata: Readonly<Record<string, string>> | null;
  /** Chorus extension, present only when there is something to say. */
  readonly chorus_warnings?: readonly string[];
  /**
   * Chorus extension, on response.done: TTFT and TTFP as the server measured them (LatencyMeter.ts), from the
   * request's arrival or, for a voice turn's automatic answer, from speech_stopped.
   */
  readonly chorus_latency?: {
    readonly from: 'request' | 'speech_stopped';
    readonly ttft_ms: number | null;
    readonly ttfp_ms: number | null;
  };
}

export type ContentPartResource =
  { readonly type: 'audio'; readonly transcript: string } | { readonly type: 'text'; readonly text: string };

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
