/**
 * Checks a value against a TypeBox schema and turns each failure into one line a person can act on:
 * `engine.thread: unknown key "thread" (did you mean "threads"?)` rather than `Unexpected property`.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { suggest, type Problems } from './problems.ts';
import type { ConfigPath } from './yamlSource.ts';

/** Reports every schema violation of `value` under `base`; returns whether the value is valid. */
export function check<T extends TSchema>(
  schema: T,
  value: unknown,
  base: ConfigPath,
  problems: Problems,
): value is Static<T> {
  const seen = new Set<string>();
  let valid = true;
  for (const error of Value.Errors(schema, value)) {
    valid = false;
    // TypeBox can report one value twice (type, then bound): the first message is the useful one.
    if (seen.has(error.path)) continue;
    seen.add(error.path);
    problems.add([...base, ...parsePointer(error.path)], describe(error, parentKeys(schema, error.path)));
  }
  return valid;
}

/** JSON pointer ("/stages/1/inputs/0/connector") -> ['stages', 1, 'inputs', 0, 'connector']. */
function parsePointer(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((raw) => raw.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function describe(error: ValueError, siblingKeys: readonly string[]): string {
  const schema = error.schema as TSchema & {
    errorMessage?: string;
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
  };
  const key = String(parsePointer(error.path).at(-1) ?? '');
  switch (error.type) {
    case ValueErrorType.ObjectAdditionalProperties: {
      const hint = suggest(key, siblingKeys);
      return hint ? `unknown key "${key}"${hint}` : `unknown key "${key}" (allowed here: ${siblingKeys.join(', ')})`;
    }
    case ValueErrorType.ObjectRequiredProperty:
      return `missing required key "${key}"`;
    default:
      break;
  }
  if (schema.errorMessage) return `${schema.errorMessage}${got(error.value)}`;
  switch (error.type) {
    case ValueErrorType.Integer:
    case ValueErrorType.IntegerMinimum:
    case ValueErrorType.IntegerMaximum:
      return `must be an integer${bounds(schema)}${got(error.value)}`;
    case ValueErrorType.Number:
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.NumberExclusiveMinimum:
    case ValueErrorType.NumberExclusiveMaximum:
      return `must be a number${bounds(schema)}${got(error.value)}`;
    case ValueErrorType.Boolean:
      return `must be true or false${got(error.value)}`;
    case ValueErrorType.String:
      return `must be a string${got(error.value)}`;
    case ValueErrorType.StringMinLength:
      return 'must not be empty';
    case ValueErrorType.Object:
      return `must be a mapping (key: value)${got(error.value)}`;
    case ValueErrorType.Array:
      return `must be a list${got(error.value)}`;
    case ValueErrorType.ArrayMinItems:
      return 'must not be empty';
    default:
      return error.message.charAt(0).toLowerCase() + error.message.slice(1);
  }
}

function bounds(schema: { minimum?: number; maximum?: number; exclusiveMinimum?: number }): string {
  const parts: string[] = [];
  if (schema.minimum !== undefined) parts.push(`>= ${schema.minimum}`);
  if (schema.exclusiveMinimum !== undefined) parts.push(`> ${schema.exclusiveMinimum}`);
  if (schema.maximum !== undefined) parts.push(`<= ${schema.maximum}`);
  return parts.length ? ` ${parts.join(' and ')}` : '';
}

function got(value: unknown): string {
  if (value === undefined) return '';
  const shown =
    typeof value === 'string'
      ? JSON.stringify(value)
      : value === null
        ? 'null (an empty value)'
        : JSON.stringify(value);
  return shown === undefined || shown.length > 40 ? '' : `, got ${shown}`;
}

/** The keys the object holding the failing property allows, for "did you mean" and "allowed here". */
function parentKeys(schema: TSchema, pointer: string): string[] {
  let node: TSchema | undefined = schema;
  const segments = parsePointer(pointer).slice(0, -1);
  for (const segment of segments) {
    if (!node) return [];
    if (typeof segment === 'number') node = node.items as TSchema | undefined;
    else if (node.properties?.[segment]) node = node.properties[segment] as TSchema;
    else if (node.patternProperties) node = Object.values(node.patternProperties)[0] as TSchema;
    else return [];
    // Optional/union wrappers: descend into the first member that is an object or array.
    if (node?.anyOf) node = (node.anyOf as TSchema[]).find((s) => s.type === 'object' || s.type === 'array');
  }
  return node?.properties ? Object.keys(node.properties) : [];
}
