/**
 * An integer with no bound in its schema is held to JSON's interoperable range (RFC 7493, I-JSON: ±(2^53 - 1), what a
 * double holds exactly): at most 16 digits. Without it the grammar admits a number that never ends, and a model
 * that likes digits (at temperature 1, a small or random one repeating "17") writes one until max_tokens, so the
 * answer is cut and is no JSON at all (bench/grammar/validity.ts, at the tag bench-archive-2026-12-02: 0 of 48
 * answers ended within 400 tokens before this). A larger integer would not survive JSON.parse in JavaScript anyway.
 * Bounds the schema gives are kept.
 *
 * Rewrites a copy of the schema; every subschema is reached through the keywords schemaKeywords.ts lets through.
 */
import { SCHEMA_MAPS, SUBSCHEMAS } from './schemaKeywords.ts';

const SAFE = Number.MAX_SAFE_INTEGER;

function isIntegerType(type: unknown): boolean {
  return type === 'integer' || (Array.isArray(type) && type.includes('integer') && !type.includes('number'));
}

export function boundIntegers(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return schema;
  if (Array.isArray(schema)) return schema.map(boundIntegers);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema as Record<string, unknown>)) {
    if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value))
      out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, boundIntegers(sub)]));
    else out[key] = SUBSCHEMAS.has(key) ? boundIntegers(value) : value;
  }
  if (isIntegerType(out.type) && out.enum === undefined && out.const === undefined) {
    if (out.minimum === undefined && out.exclusiveMinimum === undefined) out.minimum = -SAFE;
    if (out.maximum === undefined && out.exclusiveMaximum === undefined) out.maximum = SAFE;
  }
  return out;
}
