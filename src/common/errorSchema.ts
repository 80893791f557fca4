/**
 * The schema of an error crossing a process or host boundary (errors.ts SerializedError), apart from errors.ts so that
 * what only raises or serializes errors does not load typebox: a redis connector's I/O thread spent ~15% of its boot
 * CPU loading it for this schema alone.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ErrorCodes, MAX_ERROR_TEXT_CHARS, type ErrorCode, type SerializedError } from './errors.ts';

/** A code of this build (anything else is refused), texts within MAX_ERROR_TEXT_CHARS. */
export const SerializedErrorSchema = Type.Object(
  {
    code: Type.Unsafe<ErrorCode>(Type.Union(Object.values(ErrorCodes).map((code) => Type.Literal(code)))),
    message: Type.String({ maxLength: MAX_ERROR_TEXT_CHARS }),
    stack: Type.Optional(Type.String({ maxLength: MAX_ERROR_TEXT_CHARS })),
  },
  { additionalProperties: false },
);

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** tsc fails here if the schema and errors.ts's interface drift apart (each must be assignable to the other). */
export const SCHEMA_MATCHES_INTERFACE: Same<Static<typeof SerializedErrorSchema>, SerializedError> = true;
