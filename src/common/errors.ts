/**
 * Every error Chorus raises has a stable code (CHORUS_ERR_*), never reused for another meaning.
 * Across a process boundary an error travels as {code, message, stack} and is rebuilt by code.
 */
/** A message or stack that crosses a process boundary: config errors list every problem, so generous. */
export const MAX_ERROR_TEXT_CHARS = 65_536;

export const ErrorCodes = {
  CONFIG_INVALID: 'CHORUS_ERR_CONFIG_INVALID',
  CONFIG_NOT_FOUND: 'CHORUS_ERR_CONFIG_NOT_FOUND',
  MODEL_SIGNATURE: 'CHORUS_ERR_MODEL_SIGNATURE',
  MODEL_BUILD: 'CHORUS_ERR_MODEL_BUILD',
  MODEL_LOAD: 'CHORUS_ERR_MODEL_LOAD',
  TOKENIZER: 'CHORUS_ERR_TOKENIZER',
  STAGE_BOOT: 'CHORUS_ERR_STAGE_BOOT',
  STAGE_DIED: 'CHORUS_ERR_STAGE_DIED',
  STAGE_HUNG: 'CHORUS_ERR_STAGE_HUNG',
  STAGE_FAILED: 'CHORUS_ERR_STAGE_FAILED',
  // A stage instance on another machine stopped heartbeating (it died, hung, or its host or network went away).
  STAGE_LOST: 'CHORUS_ERR_STAGE_LOST',
  // A remote stage started from a different config than the deployment it tried to join.
  CONFIG_MISMATCH: 'CHORUS_ERR_CONFIG_MISMATCH',
  // A remote stage's control protocol version is not the deployment's (hosts run different Chorus versions).
  CONTROL_PROTOCOL: 'CHORUS_ERR_CONTROL_PROTOCOL',
  // A remote stage's instance name is held (a lease in Redis) by another live process, or was taken over.
  INSTANCE_NAME_TAKEN: 'CHORUS_ERR_INSTANCE_NAME_TAKEN',
  // The cross-host transport (Redis) is unreachable, restarting, refusing our credentials, or out of memory.
  TRANSPORT_UNAVAILABLE: 'CHORUS_ERR_TRANSPORT_UNAVAILABLE',
  CHUNK_TIMEOUT: 'CHORUS_ERR_CHUNK_TIMEOUT',
  CHUNK_SEQUENCE: 'CHORUS_ERR_CHUNK_SEQUENCE',
  FRAME_INVALID: 'CHORUS_ERR_FRAME_INVALID',
  FRAME_TOO_LARGE: 'CHORUS_ERR_FRAME_TOO_LARGE',
  SHM: 'CHORUS_ERR_SHM',
  CONNECTOR_CLOSED: 'CHORUS_ERR_CONNECTOR_CLOSED',
  BACKPRESSURE_TIMEOUT: 'CHORUS_ERR_BACKPRESSURE_TIMEOUT',
  REQUEST_INVALID: 'CHORUS_ERR_REQUEST_INVALID',
  REQUEST_CANCELLED: 'CHORUS_ERR_REQUEST_CANCELLED',
  REQUEST_TOO_LARGE: 'CHORUS_ERR_REQUEST_TOO_LARGE',
  KV_BUDGET: 'CHORUS_ERR_KV_BUDGET',
  OVERLOADED: 'CHORUS_ERR_OVERLOADED',
  RATE_LIMITED: 'CHORUS_ERR_RATE_LIMITED',
  SHUTTING_DOWN: 'CHORUS_ERR_SHUTTING_DOWN',
  UNAUTHORIZED: 'CHORUS_ERR_UNAUTHORIZED',
  FORBIDDEN_ORIGIN: 'CHORUS_ERR_FORBIDDEN_ORIGIN',
  MEDIA_INVALID: 'CHORUS_ERR_MEDIA_INVALID',
  MEDIA_REMOTE_URL: 'CHORUS_ERR_MEDIA_REMOTE_URL',
  ENCODER_FAILED: 'CHORUS_ERR_ENCODER_FAILED',
  // A video the decoder (a child ffmpeg, src/media/video) could not read: corrupt, truncated, no video stream.
  VIDEO_INVALID: 'CHORUS_ERR_VIDEO_INVALID',
  // A video over a limit of its encoder stage's `video:` settings: longer than max_seconds, or more bytes (input or
  // sampled frames) than its caps, or a decode that ran past its time limit. The message names the item and limit.
  VIDEO_TOO_LONG: 'CHORUS_ERR_VIDEO_TOO_LONG',
  VIDEO_TOO_LARGE: 'CHORUS_ERR_VIDEO_TOO_LARGE',
  VIDEO_DECODE_TIMEOUT: 'CHORUS_ERR_VIDEO_DECODE_TIMEOUT',
  // use_audio_in_video asked of a clip that has no audio track (or an empty one, or a clip sent as frame images):
  // refused rather than answered from the frames alone as if the sound had been heard.
  VIDEO_NO_AUDIO: 'CHORUS_ERR_VIDEO_NO_AUDIO',
  // One encoder run would need more working memory than the encoder allows (encoder.max_encode_bytes, estimated from
  // its model before the run), or onnxruntime failed to allocate it: main re-encodes the clip with fewer or smaller
  // frames (encoder.video.fallback); a client sees it only past the fallback's floor (docs/video.md).
  ENCODE_MEMORY: 'CHORUS_ERR_ENCODE_MEMORY',
  // The encoder-output store lost an item's rows between main's lookup and the Thinker's take (Redis evicted them,
  // their holder went away): main encodes the item again from the bytes it holds; a client sees it only when it cannot.
  EC_ENTRY_LOST: 'CHORUS_ERR_EC_ENTRY_LOST',
  // Main did not encode an item its Thinker's prefix cache was known to hold (its KV index), and the cache no longer
  // held it at prefill (evicted between route and prefill): main encodes it after all; a client sees it only when
  // it cannot (the request ran too many times).
  KV_NOT_HELD: 'CHORUS_ERR_KV_NOT_HELD',
  // A request's encoded media rows (numEmbeddings x the Thinker's width x 4 bytes) exceed the Thinker's budget for
  // rows held (engine.media_rows_bytes) on their own: fewer frames or clips fit (src/engine/MediaRowsBudget.ts).
  MEDIA_ROWS_BUDGET: 'CHORUS_ERR_MEDIA_ROWS_BUDGET',
  // Front end (src/server): a second response.create while one is active; response.cancel with none active;
  // a realtime client event type the server does not implement; an HTTP route that does not exist.
  RESPONSE_ACTIVE: 'CHORUS_ERR_RESPONSE_ACTIVE',
  NO_ACTIVE_RESPONSE: 'CHORUS_ERR_NO_ACTIVE_RESPONSE',
  EVENT_UNKNOWN: 'CHORUS_ERR_EVENT_UNKNOWN',
  NOT_FOUND: 'CHORUS_ERR_NOT_FOUND',
  // A request field OpenAI defines and Chorus does not implement, set to a value that asks for something (tools,
  // input transcription...): refused, naming the field, rather than answered as if it had not been sent.
  PARAM_UNSUPPORTED: 'CHORUS_ERR_PARAM_UNSUPPORTED',
  // The request names a model this server does not serve (its id, or an alias from the config's model_aliases). On
  // the wire its code is OpenAI's model_not_found.
  MODEL_NOT_FOUND: 'CHORUS_ERR_MODEL_NOT_FOUND',
  // The prompt cannot fit the Thinker's positions (its text is over the byte bound checked before tokenizing, or its
  // tokens are too many). On the wire its code is OpenAI's context_length_exceeded (clients trim history on it).
  CONTEXT_LENGTH_EXCEEDED: 'CHORUS_ERR_CONTEXT_LENGTH_EXCEEDED',
  // The Host header names no host this server answers to (DNS rebinding): see --allowed-hosts.
  FORBIDDEN_HOST: 'CHORUS_ERR_FORBIDDEN_HOST',
  // A realtime session sent nothing for the idle timeout with no response running: closed to free its slot.
  SESSION_IDLE: 'CHORUS_ERR_SESSION_IDLE',
  // A response's client stopped reading: its stream buffer stayed full (the request paused) past the client-stall
  // timeout, so the response was failed and its work freed in every stage.
  CLIENT_TOO_SLOW: 'CHORUS_ERR_CLIENT_TOO_SLOW',
  // An OTEL_* variable asks for something Chorus's tracing cannot do (an exporter or protocol it does not ship): the
  // message names the variable and what to set instead (docs/tracing.md).
  TRACING_CONFIG: 'CHORUS_ERR_TRACING_CONFIG',
  // A response_format or tool schema names a JSON Schema keyword (or format) that constrained decoding cannot enforce:
  // refused naming the keyword and where it is, rather than answered with JSON that may break it.
  GRAMMAR_UNSUPPORTED: 'CHORUS_ERR_GRAMMAR_UNSUPPORTED',
  // The grammar engine (xgrammar) refused a schema: a $ref to nothing, a regex it cannot read, an impossible range.
  GRAMMAR_INVALID: 'CHORUS_ERR_GRAMMAR_INVALID',
  // A GGUF file is not one Chorus can read (bad magic, truncated, a value type it does not know): the message names
  // the file and where reading stopped.
  GGUF_INVALID: 'CHORUS_ERR_GGUF_INVALID',
  // A well-formed GGUF whose architecture, tensor quantization type, RoPE scaling or tokenizer model Chorus does not
  // convert: the message names it and what is supported (docs/models.md).
  GGUF_UNSUPPORTED: 'CHORUS_ERR_GGUF_UNSUPPORTED',
  // Input audio transcription was asked for and the pipeline has no speech-to-text model to make it (an `asr` stage,
  // docs/models.md): each committed audio item reports it in conversation.item.input_audio_transcription.failed, and
  // /v1/audio/transcriptions answers 400; the answers themselves are not affected.
  TRANSCRIPTION_UNAVAILABLE: 'CHORUS_ERR_TRANSCRIPTION_UNAVAILABLE',
  // A transcription that was started did not finish (its model failed or timed out); the answer is not affected.
  TRANSCRIPTION_FAILED: 'CHORUS_ERR_TRANSCRIPTION_FAILED',
  // session.resume (Realtime extension, docs/realtime-resume.md): the token names no session this client may resume
  // (never issued, issued to another API key, or its session ended: closed, or dropped longer than the resume
  // window ago). Open a new session.
  // semantic_vad's end-of-turn model (Smart Turn v3) is configured but its file does not load (corrupt, unreadable,
  // not the model): the message names the file and the fix; server_vad is unaffected.
  END_OF_TURN_MODEL_UNAVAILABLE: 'CHORUS_ERR_END_OF_TURN_MODEL_UNAVAILABLE',
  RESUME_TOKEN_INVALID: 'CHORUS_ERR_RESUME_TOKEN_INVALID',
  // session.resume: the events after the client's last_seq are no longer held (the replay buffer keeps only the last
  // resume_buffer_bytes of events): the session cannot continue without a gap, so it was ended. Open a new session.
  RESUME_GAP: 'CHORUS_ERR_RESUME_GAP',
  INTERNAL: 'CHORUS_ERR_INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/**
 * An item's failures main can mend by encoding it again (src/engine/requests/reencode.ts): its encode was over the
 * encoder's memory (a clip with fewer or smaller frames may fit), past its encoder's deadline (timeout_ms: likewise),
 * its encoder-output store entry was lost (the bytes are still in main), or its encode was skipped for KV its Thinker
 * no longer held.
 */
export const REENCODE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ErrorCodes.ENCODE_MEMORY,
  ErrorCodes.CHUNK_TIMEOUT,
  ErrorCodes.EC_ENTRY_LOST,
  ErrorCodes.KV_NOT_HELD,
]);

export class ChorusError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ChorusError';
    this.code = code;
  }

  toJSON(): SerializedError {
    return { code: this.code, message: bounded(this.message), stack: this.stack && bounded(this.stack) };
  }
}

/**
 * How an error crosses a process or host boundary: a code of this build (anything else is refused), texts within
 * MAX_ERROR_TEXT_CHARS. Its schema, which the receiver checks, is errorSchema.ts: this module loads no schema library,
 * so the helper threads that import it (a redis connector's I/O thread) boot without one.
 */
export interface SerializedError {
  code: ErrorCode;
  message: string;
  stack?: string;
}

export function serializeError(err: unknown): SerializedError {
  if (err instanceof ChorusError) return err.toJSON();
  const e = err instanceof Error ? err : new Error(String(err));
  return { code: ErrorCodes.INTERNAL, message: bounded(e.message), stack: e.stack && bounded(e.stack) };
}

/** Within what the receiver takes (a longer text would get the whole message dropped by its guard). */
function bounded(text: string): string {
  return text.length <= MAX_ERROR_TEXT_CHARS ? text : `${text.slice(0, MAX_ERROR_TEXT_CHARS - 15)} [... cut here]`;
}

/** Rebuilds an error sent from another process; the code survives, the remote stack is kept as text. */
export function deserializeError(s: SerializedError): ChorusError {
  const err = new ChorusError(s.code, s.message);
  if (s.stack) err.stack = `${err.name} [remote]: ${s.message}\n${s.stack.split('\n').slice(1).join('\n')}`;
  return err;
}

export function isChorusError(err: unknown, code?: ErrorCode): err is ChorusError {
  return err instanceof ChorusError && (code === undefined || err.code === code);
}
