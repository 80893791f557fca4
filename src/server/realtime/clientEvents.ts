/**
 * The realtime client events Chorus implements (OpenAI Realtime GA names and shapes), their schemas, and the
 * one parse step every frame goes through (frameText, then parseClientEvent). The events and their session and
 * response objects are closed: a field they do not name is refused (a misspelt field silently ignored would change
 * the answer with no word). Fields OpenAI defines and Chorus does not implement (tools, noise reduction...) are
 * refused when they ask for something, taken when they ask for nothing (unimplementedFields.ts).
 */
import { Type, type Static, type TProperties } from '@sinclair/typebox';
import type { RawData } from 'ws';
import { ErrorCodes } from '../../common/errors.ts';
import { CacheSaltField } from '../cachePartition.ts';
import { generationFields } from '../generationParams.ts';
import { ClientInputError, compileValidator } from '../validate.ts';
import {
  refuseUnimplementedResponse,
  refuseUnimplementedSession,
  unimplementedAudioInputFields,
  unimplementedAudioOutputFields,
  unimplementedResponseFields,
  unimplementedSessionFields,
} from './unimplementedFields.ts';
import { FunctionCallItem, FunctionCallOutputItem, toolFields } from './realtimeTools.ts';

/** The session and response objects, and the objects in them, take only the fields they name. */
const closed = { additionalProperties: false } as const;

const Modalities = Type.Array(Type.Union([Type.Literal('text'), Type.Literal('audio')]), { minItems: 1, maxItems: 2 });

/** GA shape {type: 'audio/pcm', rate: 24000}; the beta string 'pcm16' is accepted as the same thing. */
const AudioFormat = Type.Union([
  Type.Object({ type: Type.Literal('audio/pcm'), rate: Type.Optional(Type.Literal(24000)) }),
  Type.Literal('pcm16'),
]);

const Voice = Type.Union([
  Type.String({ minLength: 1, maxLength: 64 }),
  Type.Object({ id: Type.String({ maxLength: 64 }) }),
]);

const MaxOutputTokens = Type.Union([Type.Integer({ minimum: 1 }), Type.Literal('inf')]);

/**
 * Voice turns detected by the server (src/server/realtime/VoiceTurns.ts); null = the client commits turns itself.
 * semantic_vad ends a turn on an end-of-turn model (turnDetection.ts).
 */
const TurnDetection = Type.Union([
  Type.Object(
    {
      type: Type.Literal('semantic_vad'),
      eagerness: Type.Optional(
        Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('auto')]),
      ),
      create_response: Type.Optional(Type.Boolean()),
      interrupt_response: Type.Optional(Type.Boolean()),
    },
    closed,
  ),
  Type.Object(
    {
      type: Type.Literal('server_vad'),
      threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      prefix_padding_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
      silence_duration_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000 })),
      create_response: Type.Optional(Type.Boolean()),
      interrupt_response: Type.Optional(Type.Boolean()),
      idle_timeout_ms: Type.Optional(Type.Union([Type.Integer({ minimum: 1000, maximum: 600_000 }), Type.Null()])),
    },
    closed,
  ),
  Type.Null(),
]);
export type TurnDetectionFields = Static<typeof TurnDetection>;

const AudioConfig = Type.Object(
  {
    input: Type.Optional(
      Type.Object(
        {
          format: Type.Optional(AudioFormat),
          turn_detection: Type.Optional(TurnDetection),
          /** {model, language?, prompt?} or null: checked by transcriptionSetting.ts (it names the bad field). */
          transcription: Type.Optional(Type.Unknown()),
          ...unimplementedAudioInputFields,
        },
        closed,
      ),
    ),
    output: Type.Optional(
      Type.Object(
        { format: Type.Optional(AudioFormat), voice: Type.Optional(Voice), ...unimplementedAudioOutputFields },
        closed,
      ),
    ),
  },
  closed,
);

export const SessionFields = Type.Object(
  {
    type: Type.Optional(Type.Literal('realtime')),
    model: Type.Optional(Type.String()),
    output_modalities: Type.Optional(Modalities),
    instructions: Type.Optional(Type.String()),
    max_output_tokens: Type.Optional(MaxOutputTokens),
    audio: Type.Optional(AudioConfig),
    /** The beta placement of audio.input.turn_detection. */
    turn_detection: Type.Optional(TurnDetection),
    /** The beta name of audio.input.transcription (transcriptionSetting.ts). */
    input_audio_transcription: Type.Optional(Type.Unknown()),
    /**
     * "auto" | "disabled" | {type: "retention_ratio", retention_ratio, token_limits?}: checked by parseTruncation,
     * whose errors name the field and its accepted values (a schema union could only say "not in any accepted form").
     */
    truncation: Type.Optional(Type.Unknown()),
    /** "auto" | {workflow_name?, group_id?, metadata?} | null: checked by sessionTracing.ts. */
    tracing: Type.Optional(Type.Unknown()),
    /** vLLM's: the session's prefix-cache and encoder-output partition, for every response (cachePartition.ts). */
    cache_salt: CacheSaltField,
    ...toolFields,
    ...generationFields,
    ...unimplementedSessionFields,
  },
  closed,
);
export type SessionFields = Static<typeof SessionFields>;

const ContentPart = Type.Object({
  type: Type.Union([
    Type.Literal('input_text'),
    Type.Literal('input_audio'),
    Type.Literal('input_image'),
    Type.Literal('text'),
    Type.Literal('output_text'),
  ]),
  text: Type.Optional(Type.String()),
  /** input_audio: base64 of pcm16 (24 kHz mono, little-endian), or of a WAV file with format: 'wav'. */
  audio: Type.Optional(Type.String()),
  /** Chorus extension (input_audio): what `audio` holds; pcm16 by default, as the session's input format says. */
  format: Type.Optional(Type.Union([Type.Literal('pcm16'), Type.Literal('wav')])),
  transcript: Type.Optional(Type.String()),
  /** input_image: a data: URL (data:image/png;base64,... or image/jpeg). */
  image_url: Type.Optional(Type.String()),
  detail: Type.Optional(Type.String()),
});
export type ContentPart = Static<typeof ContentPart>;

export const MessageItem = Type.Object({
  type: Type.Literal('message'),
  role: Type.Union([Type.Literal('user'), Type.Literal('system'), Type.Literal('assistant')]),
  content: Type.Array(ContentPart, { maxItems: 64 }),
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' })),
});
export type MessageItem = Static<typeof MessageItem>;

/** What conversation.item.create (and response.input) take: a message, a call, or a call's result. */
export const ConversationItem = Type.Union([MessageItem, FunctionCallItem, FunctionCallOutputItem]);
export type ConversationItem = Static<typeof ConversationItem>;

export const ResponseFields = Type.Object(
  {
    output_modalities: Type.Optional(Modalities),
    instructions: Type.Optional(Type.String()),
    max_output_tokens: Type.Optional(MaxOutputTokens),
    audio: Type.Optional(
      Type.Object(
        {
          output: Type.Optional(
            Type.Object({ format: Type.Optional(AudioFormat), voice: Type.Optional(Voice) }, closed),
          ),
        },
        closed,
      ),
    ),
    /** 'none' = an out-of-band response: its output is not added to the conversation. */
    conversation: Type.Optional(Type.String()),
    /** When present, the response sees these items instead of the conversation. */
    input: Type.Optional(Type.Array(ConversationItem, { maxItems: 1000 })),
    /**
     * Tags the client reads back on the response (OpenAI's limits: 16 pairs, keys up to 64 characters, values up
     * to 512). Chorus reads one: `traceparent`, the W3C trace context this response's root span is a child of.
     */
    metadata: Type.Optional(
      Type.Union([
        Type.Null(),
        Type.Record(Type.String({ maxLength: 64 }), Type.String({ maxLength: 512 }), { maxProperties: 16 }),
      ]),
    ),
    ...toolFields,
    ...generationFields,
    ...unimplementedResponseFields,
  },
  closed,
);
export type ResponseFields = Static<typeof ResponseFields>;

const EventId = Type.Optional(Type.String({ maxLength: 128 }));

/**
 * A client event's schema: its `type`, its optional `event_id` and its own fields. Every event is closed too: a field
 * no event names (misspelt, or another API's) is refused by name.
 */
const event = <T extends string, P extends TProperties = Record<never, never>>(type: T, properties?: P) =>
  Type.Object({ type: Type.Literal(type), event_id: EventId, ...(properties ?? ({} as P)) }, closed);

const schemas = {
  'session.update': event('session.update', { session: SessionFields }),
  'conversation.item.create': event('conversation.item.create', {
    previous_item_id: Type.Optional(Type.String()),
    item: ConversationItem,
  }),
  'input_audio_buffer.append': event('input_audio_buffer.append', { audio: Type.String() }),
  'input_audio_buffer.commit': event('input_audio_buffer.commit'),
  'input_audio_buffer.clear': event('input_audio_buffer.clear'),
  'response.create': event('response.create', { response: Type.Optional(ResponseFields) }),
  'response.cancel': event('response.cancel', { response_id: Type.Optional(Type.String()) }),
  'conversation.item.delete': event('conversation.item.delete', { item_id: Type.String({ minLength: 1 }) }),
  'conversation.item.retrieve': event('conversation.item.retrieve', { item_id: Type.String({ minLength: 1 }) }),
  'conversation.item.truncate': event('conversation.item.truncate', {
    item_id: Type.String({ minLength: 1 }),
    content_index: Type.Integer({ minimum: 0 }),
    audio_end_ms: Type.Integer({ minimum: 0 }),
  }),
  // Chorus extensions (docs/realtime-resume.md): make the session resumable, resume one on a new connection, and
  // say how much of an answer's audio the user has heard.
  'session.resume.enable': event('session.resume.enable'),
  'session.resume': event('session.resume', {
    resume_token: Type.String({ minLength: 1, maxLength: 128 }),
    last_seq: Type.Integer({ minimum: 0 }),
  }),
  'output_audio.playback_ack': event('output_audio.playback_ack', {
    item_id: Type.String({ minLength: 1 }),
    played_ms: Type.Integer({ minimum: 0 }),
  }),
};

type Schemas = typeof schemas;
/** The client events as one discriminated union on `type` (RealtimeSession dispatches it by an exhaustive switch). */
export type ClientEvent = { [K in keyof Schemas]: Static<Schemas[K]> }[keyof Schemas];
export type ClientEventType = ClientEvent['type'];
export type ClientEventOf<K extends ClientEventType> = Static<Schemas[K]>;

const validators = Object.fromEntries(
  Object.entries(schemas).map(([type, schema]) => [type, compileValidator(schema)]),
) as { [K in keyof Schemas]: ReturnType<typeof compileValidator<Schemas[K]>> };

export const supportedClientEvents = Object.keys(schemas);

function isClientEventType(type: string): type is ClientEventType {
  return Object.hasOwn(validators, type);
}

/** The event_id of a frame that failed to parse, if one can be read, so the error can point at it. */
export function eventIdOf(value: unknown): string | null {
  const id = (value as { event_id?: unknown } | null)?.event_id;
  return typeof id === 'string' ? id : null;
}

/** Best effort: the event_id of a frame that failed before it was parsed into an event. */
export function eventIdFromText(text: string): string | null {
  try {
    return eventIdOf(JSON.parse(text));
  } catch {
    return null;
  }
}

/** The text of one WebSocket frame, or ClientInputError for a frame over `maxFrameBytes` or a binary one. */
export function frameText(data: RawData, isBinary: boolean, maxFrameBytes: number): string {
  const bytes = Array.isArray(data)
    ? data.reduce((n, b) => n + b.length, 0)
    : data instanceof ArrayBuffer
      ? data.byteLength
      : data.length;
  if (bytes > maxFrameBytes) {
    throw new ClientInputError(
      `frame of ${bytes} bytes is over this server's ${maxFrameBytes}: split audio into smaller appends`,
      null,
      ErrorCodes.REQUEST_TOO_LARGE,
    );
  }
  if (isBinary) throw new ClientInputError('binary frames are not supported: send each event as a JSON text frame');
  return Array.isArray(data) ? Buffer.concat(data).toString('utf8') : Buffer.from(data as Buffer).toString('utf8');
}

/** Parses one text frame into a typed client event, or throws ClientInputError with a stable code. */
export function parseClientEvent(frame: string): ClientEvent {
  let value: unknown;
  try {
    value = JSON.parse(frame);
  } catch (err) {
    throw new ClientInputError(
      `frame is not valid JSON (${(err as Error).message}): send one JSON event per text frame`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ClientInputError('frame must be a JSON object with a "type" field');
  }
  const type = (value as { type?: unknown }).type;
  if (typeof type !== 'string') throw new ClientInputError('event is missing its "type" field', 'type');
  if (!isClientEventType(type)) {
    throw new ClientInputError(
      `event type "${type.slice(0, 64)}" is not supported; supported: ${supportedClientEvents.join(', ')}`,
      'type',
      ErrorCodes.EVENT_UNKNOWN,
    );
  }
  const event = validators[type].parse(value, type);
  if (event.type === 'session.update') refuseUnimplementedSession(event.session);
  else if (event.type === 'response.create') refuseUnimplementedResponse(event.response);
  return event;
}
