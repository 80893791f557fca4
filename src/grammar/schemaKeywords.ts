/**
 * The JSON Schema keywords a grammar enforces. xgrammar 0.1.27 drops some keywords without a word (uniqueItems,
 * multipleOf, not, if/then/else, dependentRequired, an unknown format... measured by compiling each schema with and
 * without the keyword: the grammar came out the same) and turns `contains` into "only the empty array". An answer
 * under such a schema could break it, so a schema naming any keyword outside this list is refused, naming the
 * keyword and where it is; annotations (title, description...) change nothing and pass.
 */
import { ChorusError, ErrorCodes } from '../common/errors.ts';

/** Keywords xgrammar turns into grammar (anyOf and oneOf alike: oneOf's "exactly one" is not enforced). */
const ENFORCED = new Set([
  'type',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'allOf', // one subschema only: xgrammar warns that more are not merged (refused through its warning)
  '$ref',
  'properties',
  'required',
  'additionalProperties',
  'unevaluatedProperties',
  'patternProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'items',
  'prefixItems',
  'unevaluatedItems',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
]);

/** Keywords that describe and never constrain, and the places subschemas are kept for $ref. */
const ANNOTATIONS = new Set([
  '$schema',
  '$id',
  '$comment',
  '$defs',
  'definitions',
  'title',
  'description',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
]);

/** Formats xgrammar has a grammar for (others, idn-email or regex say, compile to any string). */
export const ENFORCED_FORMATS = new Set([
  'date',
  'time',
  'date-time',
  'duration',
  'email',
  'ipv4',
  'ipv6',
  'hostname',
  'uuid',
  'uri',
  'uri-reference',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
]);

/** Numeric bounds: exact on integers only. */
const BOUNDS = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']);

/** Keys whose value is a map of name -> subschema. */
export const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
/** Keys whose value is a subschema (or an array of them). */
export const SUBSCHEMAS = new Set([
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'items',
  'prefixItems',
  'unevaluatedItems',
  'anyOf',
  'oneOf',
  'allOf',
]);

export class UnsupportedSchemaError extends ChorusError {
  constructor(
    readonly keyword: string,
    readonly at: string,
    message: string,
  ) {
    super(ErrorCodes.GRAMMAR_UNSUPPORTED, message);
  }
}

/**
 * Throws UnsupportedSchemaError for the first keyword the grammar would not enforce. `at` names the schema in the
 * request (e.g. response_format.json_schema.schema); the error names the path inside it.
 */
export function checkSchemaKeywords(schema: unknown, at: string): void {
  walk(schema, at);
}

function walk(schema: unknown, path: string): void {
  if (typeof schema === 'boolean') return;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    throw new UnsupportedSchemaError('', path, `${path} must be a JSON schema (an object or a boolean)`);
  }
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    const here = `${path}.${key}`;
    if (ANNOTATIONS.has(key) && !SCHEMA_MAPS.has(key)) continue;
    if (!ENFORCED.has(key) && !SCHEMA_MAPS.has(key)) {
      throw new UnsupportedSchemaError(
        key,
        here,
        `${here}: the JSON Schema keyword "${key}" is not supported by constrained decoding (the grammar could not ` +
          'enforce it, so an answer could break it): leave it out, or check the value after the answer',
      );
    }
    if (key === 'format' && typeof value === 'string' && !ENFORCED_FORMATS.has(value)) {
      throw new UnsupportedSchemaError(
        'format',
        here,
        `${here}: format "${value.slice(0, 64)}" is not supported by constrained decoding; supported: ` +
          `${[...ENFORCED_FORMATS].join(', ')} (or use a pattern)`,
      );
    }
    if (BOUNDS.has(key) && (schema as { type?: unknown }).type !== 'integer') {
      throw new UnsupportedSchemaError(
        key,
        here,
        `${here}: "${key}" is enforced on integers only (xgrammar 0.1.27 bounds a number's integer part, so 1.4 ` +
          'passed a maximum of 1): use type integer, or leave the bound out and check the value after the answer',
      );
    }
    if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null)
      for (const [name, sub] of Object.entries(value)) walk(sub, `${here}.${name}`);
    else if (SUBSCHEMAS.has(key) && Array.isArray(value)) value.forEach((sub, i) => walk(sub, `${here}[${i}]`));
    else if (SUBSCHEMAS.has(key)) walk(value, here);
  }
}
