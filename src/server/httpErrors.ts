/**
 * How errors reach clients: the OpenAI error body `{error: {message, type, code, param}}` with `code` one of
 * the stable CHORUS_ERR_* codes, and an HTTP status chosen from that code.
 */
import { ChorusError, ErrorCodes, type ErrorCode } from '../common/errors.ts';
import { countClientError } from './metrics/metrics.ts';

const statusByCode: Partial<Record<ErrorCode, number>> = {
  [ErrorCodes.REQUEST_INVALID]: 400,
  [ErrorCodes.MEDIA_INVALID]: 400,
  [ErrorCodes.MEDIA_REMOTE_URL]: 400,
  [ErrorCodes.VIDEO_INVALID]: 400,
  [ErrorCodes.VIDEO_TOO_LONG]: 400,
  [ErrorCodes.VIDEO_TOO_LARGE]: 400,
  [ErrorCodes.VIDEO_DECODE_TIMEOUT]: 400, // the client's video took the decoder too long; nothing else is affected
  [ErrorCodes.VIDEO_NO_AUDIO]: 400, // use_audio_in_video on a silent clip: the client's to change
  [ErrorCodes.MEDIA_ROWS_BUDGET]: 400, // fewer frames or clips fit: the client's to change
  [ErrorCodes.ENCODE_MEMORY]: 400, // even at the fallback's floor: a lower fps or max_frames is the client's to ask
  [ErrorCodes.EC_ENTRY_LOST]: 503, // its rows were lost and could not be encoded again now: retry
  [ErrorCodes.EVENT_UNKNOWN]: 400,
  [ErrorCodes.UNAUTHORIZED]: 401,
  [ErrorCodes.FORBIDDEN_ORIGIN]: 403,
  [ErrorCodes.NOT_FOUND]: 404,
  [ErrorCodes.PARAM_UNSUPPORTED]: 400,
  [ErrorCodes.GRAMMAR_UNSUPPORTED]: 400,
  [ErrorCodes.GRAMMAR_INVALID]: 400,
  [ErrorCodes.MODEL_NOT_FOUND]: 404, // OpenAI's and vLLM's status for an unknown model
  [ErrorCodes.TRANSCRIPTION_UNAVAILABLE]: 400, // the pipeline cannot: ask another server, or leave it out
  [ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE]: 400, // semantic_vad cannot run here: server_vad can
  [ErrorCodes.RESPONSE_ACTIVE]: 409,
  [ErrorCodes.NO_ACTIVE_RESPONSE]: 400, // response.cancel with nothing to cancel: the client's mistake
  [ErrorCodes.REQUEST_TOO_LARGE]: 413,
  [ErrorCodes.CONTEXT_LENGTH_EXCEEDED]: 400, // OpenAI's status for the same error
  [ErrorCodes.FORBIDDEN_HOST]: 421, // Misdirected Request: this server is not the host the request names
  [ErrorCodes.SESSION_IDLE]: 408,
  [ErrorCodes.CLIENT_TOO_SLOW]: 408, // the client's to fix (read faster); only a stream that began can get it
  [ErrorCodes.RESUME_TOKEN_INVALID]: 404, // no resumable session under that token for this key: open a new one
  [ErrorCodes.RESUME_GAP]: 410, // the missed events are gone: the session cannot continue whole
  [ErrorCodes.CONFIG_INVALID]: 400, // a reload with a bad graph: the old one keeps serving
  [ErrorCodes.CONFIG_NOT_FOUND]: 400,
  // In a request, the model cannot do what was asked (audio from a text-only export, media without inputs_embeds):
  // the client can ask for what it can do.
  [ErrorCodes.MODEL_SIGNATURE]: 400,
  [ErrorCodes.RATE_LIMITED]: 429, // admission: retry after the Retry-After header's seconds
  [ErrorCodes.OVERLOADED]: 503,
  [ErrorCodes.REQUEST_CANCELLED]: 503, // cancelled by the server (shutdown): retry elsewhere or later
  [ErrorCodes.SHUTTING_DOWN]: 503,
  [ErrorCodes.STAGE_DIED]: 503,
  [ErrorCodes.STAGE_HUNG]: 503,
  [ErrorCodes.STAGE_LOST]: 503,
  [ErrorCodes.TRANSPORT_UNAVAILABLE]: 503,
  [ErrorCodes.STAGE_BOOT]: 503,
  [ErrorCodes.KV_BUDGET]: 503,
};

export function httpStatusFor(code: ErrorCode): number {
  return statusByCode[code] ?? 500;
}

export interface ErrorBody {
  error: { message: string; type: string; code: string; param: string | null };
}

/**
 * The `code` a client sees: ours, except where OpenAI has a code for the very same condition, which its SDKs and
 * the frameworks around them branch on (LangChain and LiteLLM trim the history on context_length_exceeded).
 */
export function wireCode(code: ErrorCode): string {
  if (code === ErrorCodes.CONTEXT_LENGTH_EXCEEDED) return 'context_length_exceeded';
  if (code === ErrorCodes.MODEL_NOT_FOUND) return 'model_not_found';
  return code;
}

/** OpenAI's error `type` vocabulary: clients branch on it before they look at our code. */
export function errorType(code: ErrorCode): string {
  const status = httpStatusFor(code);
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 429) return 'rate_limit_exceeded';
  if (status < 500) return 'invalid_request_error';
  return 'server_error';
}

export function errorBody(code: ErrorCode, message: string, param: string | null = null): ErrorBody {
  return { error: { message, type: errorType(code), code: wireCode(code), param } };
}

/**
 * Maps anything thrown (ours, fastify's, or a bug) to a stable code and a message that says what to do.
 * `maxBodyBytes`: the server's body limit, which the 413 names.
 */
export function toChorusError(err: unknown, maxBodyBytes?: number): ChorusError {
  if (err instanceof ChorusError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string; validation?: unknown };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ChorusError(
        ErrorCodes.REQUEST_TOO_LARGE,
        `the request body is over this server's limit of ${maxBodyBytes ?? 'its'} bytes: send less (large media ` +
          `by URL from an allowed prefix, not inline), or start the server with a larger --max-body-bytes`,
        { cause: err },
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ChorusError(ErrorCodes.REQUEST_INVALID, 'unsupported Content-Type: send application/json', {
        cause: err,
      });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ChorusError(ErrorCodes.REQUEST_INVALID, `request body is not valid JSON: ${e.message ?? ''}`, {
        cause: err,
      });
  }
  if (e?.statusCode === 400 || e?.validation || err instanceof SyntaxError) {
    return new ChorusError(ErrorCodes.REQUEST_INVALID, `invalid request: ${e?.message ?? String(err)}`, { cause: err });
  }
  return new ChorusError(ErrorCodes.INTERNAL, 'internal server error (see the server log)', { cause: err });
}

/** Counts the error and returns [status, body] for a reply. */
export function replyError(err: ChorusError): [number, ErrorBody] {
  countClientError(err.code);
  return [httpStatusFor(err.code), errorBody(err.code, err.message)];
}
