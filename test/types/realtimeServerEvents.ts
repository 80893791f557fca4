/**
 * Compile-time only (checked by `npx tsc --noEmit`; vitest does not collect it): every Realtime server event Chorus
 * sends is assignable to the openai SDK's event of the same type, so a field misnamed, missing or mistyped, or an
 * event name OpenAI does not define, fails here by name.
 *
 * A null is compared as null: where the SDK types a field optional but not nullable (response.status_details, usage,
 * conversation_id), Chorus leaves it out, since its users' code is not written for a null there (issue 32).
 *
 * Compared as OpenAI's types see them: readonly dropped, and two deliberate echoes cut out: items a client created
 * come back in the client's own content types (the beta `text`, an input_audio transcript of null), and a voice
 * given as {id} comes back as given.
 */
import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import type { ChorusExtensionEvent, ServerEvent, ServerEventType } from '../../src/server/realtime/ServerEvent.ts';
import type { EchoedItemResource } from '../../src/server/realtime/ItemResource.ts';

type AsOpenAISees<T> = T extends string | number | boolean | null | undefined
  ? T
  : T extends EchoedItemResource
    ? never
    : [keyof T] extends ['id']
      ? never // the {id} voice
      : T extends readonly (infer U)[]
        ? AsOpenAISees<U>[]
        : { -readonly [K in keyof T]: AsOpenAISees<T[K]> };

/** Chorus's extension events (session resume) have no OpenAI counterpart to conform to. */
type OpenAIEventType = Exclude<ServerEventType, ChorusExtensionEvent['type']>;

type Ours<K extends ServerEventType> = AsOpenAISees<Extract<ServerEvent, { type: K }>>;
type Theirs<K extends ServerEventType> = Extract<RealtimeServerEvent, { type: K }>;
type Conforms<K extends ServerEventType> = [Ours<K>] extends [Theirs<K>] ? true : K;

/** One entry per event type: a type that stops conforming turns its `true` into a compile error naming it. */
export const conforming: { [K in OpenAIEventType]: Conforms<K> } = {
  'session.created': true,
  'session.updated': true,
  'conversation.item.added': true,
  'conversation.item.done': true,
  'conversation.item.deleted': true,
  'conversation.item.retrieved': true,
  'input_audio_buffer.committed': true,
  'input_audio_buffer.cleared': true,
  'input_audio_buffer.speech_started': true,
  'input_audio_buffer.speech_stopped': true,
  'input_audio_buffer.timeout_triggered': true,
  'conversation.item.input_audio_transcription.delta': true,
  'conversation.item.input_audio_transcription.completed': true,
  'conversation.item.input_audio_transcription.failed': true,
  'conversation.item.truncated': true,
  'response.created': true,
  'response.output_item.added': true,
  'response.content_part.added': true,
  'response.output_text.delta': true,
  'response.output_text.done': true,
  'response.output_audio_transcript.delta': true,
  'response.output_audio_transcript.done': true,
  'response.output_audio.delta': true,
  'response.output_audio.done': true,
  'response.content_part.done': true,
  'response.output_item.done': true,
  'response.function_call_arguments.delta': true,
  'response.function_call_arguments.done': true,
  'response.done': true,
  error: true,
};
