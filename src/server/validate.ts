/**
 * Schema checks for client input (HTTP bodies and realtime events) with TypeBox: one compiled checker per
 * schema, and an error that names the offending field so the client can fix it.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { ChorusError, ErrorCodes } from '../common/errors.ts';

/** A ChorusError carrying the JSON-pointer-ish path of the bad field (OpenAI's `param`). */
export class ClientInputError extends ChorusError {
  readonly param: string | null;
  constructor(message: string, param: string | null = null, code: ChorusError['code'] = ErrorCodes.REQUEST_INVALID) {
    super(code, message);
    this.param = param;
  }
}

export interface Validator<T extends TSchema> {
  /** Returns the value typed, or throws ClientInputError naming the first bad field. */
  parse(value: unknown, what: string): Static<T>;
}

function describe(error: ValueError): string {
  if (error.type === ValueErrorType.ObjectAdditionalProperties)
    return 'is not a field Chorus knows there (misspelt, or not in the OpenAI API): leave it out';
  // A schema's own wording (`errorMessage`, as the config schema has) says what is accepted better than TypeBox's.
  const own = (error.schema as { errorMessage?: unknown }).errorMessage;
  if (typeof own === 'string') return own;
  const alternatives = (error.schema as { anyOf?: TSchema[] }).anyOf;
  if (alternatives?.every((s) => 'const' in s)) {
    return (
      `must be one of ` +
      `${alternatives.map((s) => JSON.stringify((s as unknown as { const: unknown }).const)).join(', ')}`
    );
  }
  if (alternatives) return 'is not in any accepted form (see the API reference)';
  return error.message.replace(/^Expected/, 'expected');
}

/** JSON pointer (/messages/0/role) to a readable path (messages[0].role). */
function readablePath(pointer: string): string {
  return pointer
    .split('/')
    .filter((p) => p.length > 0)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
}

/**
 * A value that matches no alternative of a union is reported at the union ("messages[0].content is not in any
 * accepted form"). When one alternative got further into the value than the others (the content is an array,
 * and its part 2 is what is wrong), that alternative's error names the field to fix: report it instead.
 */
function deepest(error: ValueError): ValueError {
  let best: ValueError | null = null;
  for (const variant of error.errors ?? []) {
    const first = variant.First();
    if (first && first.path.length > error.path.length && (!best || first.path.length > best.path.length)) best = first;
  }
  return best ? deepest(best) : error;
}

export function compileValidator<T extends TSchema>(schema: T): Validator<T> {
  const check: TypeCheck<T> = TypeCompiler.Compile(schema);
  return {
    parse(value, what) {
      if (check.Check(value)) return value;
      const error = check.Errors(value).First();
      if (!error) throw new ClientInputError(`${what}: invalid`);
      const first = deepest(error);
      const path = readablePath(first.path);
      throw new ClientInputError(`${what}: ${path || 'value'} ${describe(first)}`, path || null);
    },
  };
}
