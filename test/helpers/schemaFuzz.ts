/**
 * Property-based fuzz from the control messages' own schemas (src/worker/messages.ts, src/control/wire.ts): a
 * fast-check arbitrary of valid values for any of their TypeBox schemas, and the ways to make one value invalid at
 * each of its places (NaN, ±Infinity, below the minimum, above the maximum, a fraction for an integer, the wrong type,
 * a string or an array one over its bound, a name not of its form, a field missing or one more). Derived from the one
 * declaration, so a new field or bound is fuzzed without touching this file.
 *
 * Unions are descended into only through the branch the value matches: every union in the messages is discriminated
 * (by a `type` or `kind` literal, or by JSON type), so a value made invalid for its branch matches no other.
 */
import { Kind, OptionalKind, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';

/** Arrays and records in generated valid values stay short (their bounds are fuzzed by the mutations). */
const MAX_GENERATED_ITEMS = 3;

type Schema = TSchema & Record<string, unknown>;

export function arbitraryOf(schema: TSchema): fc.Arbitrary<unknown> {
  const s = schema as Schema;
  switch (s[Kind]) {
    case 'Literal':
      return fc.constant(s.const);
    case 'Boolean':
      return fc.boolean();
    case 'Integer':
    case 'Number':
      return numberOf(s);
    case 'String':
      return stringOf(s);
    case 'Array':
      return fc.array(arbitraryOf(s.items as TSchema), { maxLength: Math.min(MAX_GENERATED_ITEMS, itemsBound(s)) });
    case 'Union':
      return fc.oneof(...(s.anyOf as TSchema[]).map(arbitraryOf));
    case 'Record': {
      const [keyPattern, valueSchema] = Object.entries(s.patternProperties as Record<string, TSchema>)[0];
      const key = fc.stringMatching(new RegExp(keyPattern)).filter((k) => k.length <= 64);
      return fc.dictionary(key, arbitraryOf(valueSchema), { maxKeys: MAX_GENERATED_ITEMS });
    }
    case 'Object': {
      const properties = (s.properties ?? {}) as Record<string, TSchema>;
      const required = Object.keys(properties).filter((k) => !(properties[k] as Schema)[OptionalKind]);
      const arbitraries = Object.fromEntries(Object.entries(properties).map(([k, p]) => [k, arbitraryOf(p)]));
      return fc.record(arbitraries, { requiredKeys: required });
    }
    default:
      throw new Error(`schemaFuzz: no arbitrary for a ${String(s[Kind])} schema`);
  }
}

function numberOf(s: Schema): fc.Arbitrary<number> {
  const min = (s.minimum as number | undefined) ?? (s.exclusiveMinimum as number | undefined) ?? -1e9;
  const max = (s.maximum as number | undefined) ?? 1e12;
  if (s[Kind] === 'Integer') return fc.integer({ min: Math.ceil(min), max: Math.min(max, Number.MAX_SAFE_INTEGER) });
  const double = fc.double({
    min,
    max,
    noNaN: true,
    noDefaultInfinity: true,
    minExcluded: s.exclusiveMinimum !== undefined,
  });
  return double.map((x) => (x === 0 ? 0 : x)); // no -0: msgpack writes it as 0, which is no loss
}

function stringOf(s: Schema): fc.Arbitrary<string> {
  const maxLength = (s.maxLength as number | undefined) ?? 64;
  const minLength = (s.minLength as number | undefined) ?? 0;
  if (typeof s.pattern === 'string')
    return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length <= maxLength && v.length >= minLength);
  return fc.string({ minLength, maxLength: Math.min(maxLength, 40) });
}

const itemsBound = (s: Schema) => (s.maxItems as number | undefined) ?? Infinity;

/** One way to make a value invalid: where (a path of keys) and what to do there. */
export interface Mutation {
  readonly path: readonly (string | number)[];
  readonly what: string;
  /** The new value at `path`; `REMOVE` deletes the field. */
  readonly value: unknown;
}

export const REMOVE = Symbol('remove');

/** Every mutation of `value` (valid for `schema`) that its schema refuses. */
export function mutationsOf(schema: TSchema, value: unknown, path: (string | number)[] = []): Mutation[] {
  const s = schema as Schema;
  const here = (what: string, v: unknown): Mutation => ({ path, what, value: v });
  const common = [here('NaN', NaN), here('Infinity', Infinity), here('null', null)];
  switch (s[Kind]) {
    case 'Literal':
      return [...common, here('an unknown name', `${String(s.const)}-unknown`)];
    case 'Boolean':
      return [...common, here('a number for a boolean', 1)];
    case 'Integer':
    case 'Number':
      return [...common, ...numberMutations(s, path)];
    case 'String':
      return [...common, ...stringMutations(s, path)];
    case 'Array': {
      const items = value as unknown[];
      const huge = Array.from({ length: Math.min(itemsBound(s) + 1, 100_000) }, () => items[0] ?? 0);
      const out = [...common, here('an object for an array', {})];
      if (itemsBound(s) !== Infinity) out.push(here(`an array of ${huge.length}`, huge));
      items.forEach((item, i) => out.push(...mutationsOf(s.items as TSchema, item, [...path, i])));
      return out;
    }
    case 'Union': {
      // A replacement of the whole value that another branch takes is no mutation (`true` for `1`, where a part is
      // a number or a flag); deeper ones are (the branches are discriminated).
      const branches = s.anyOf as TSchema[];
      const branch = branches.find((b) => Value.Check(b, value));
      const inBranch = branch ? mutationsOf(branch, value, path) : [];
      const refused = (m: Mutation) => m.path.length > path.length || !branches.some((b) => Value.Check(b, m.value));
      return [...common, ...inBranch.filter(refused)];
    }
    case 'Record': {
      const [, valueSchema] = Object.entries(s.patternProperties as Record<string, TSchema>)[0];
      const out = [...common, here('a key not of its form', { ...(value as object), '#not a name': 0 })];
      for (const [k, v] of Object.entries(value as object)) out.push(...mutationsOf(valueSchema, v, [...path, k]));
      return out;
    }
    case 'Object':
      return [
        ...common,
        here('an array for an object', []),
        ...objectMutations(s, value as Record<string, unknown>, path),
      ];
    default:
      return common;
  }
}

function numberMutations(s: Schema, path: (string | number)[]): Mutation[] {
  const out: Mutation[] = [
    { path, what: '-Infinity', value: -Infinity },
    { path, what: 'a string', value: '1' },
  ];
  if (typeof s.minimum === 'number') out.push({ path, what: 'below its minimum', value: s.minimum - 1 });
  if (typeof s.exclusiveMinimum === 'number')
    out.push({ path, what: 'at its exclusive minimum', value: s.exclusiveMinimum });
  if (typeof s.maximum === 'number') out.push({ path, what: 'above its maximum', value: s.maximum * 2 + 1 });
  if (s[Kind] === 'Integer') out.push({ path, what: 'a fraction', value: 0.5 });
  return out;
}

function stringMutations(s: Schema, path: (string | number)[]): Mutation[] {
  const out: Mutation[] = [{ path, what: 'a number for a string', value: 7 }];
  if (typeof s.maxLength === 'number')
    out.push({ path, what: 'one over its length', value: 'a'.repeat(s.maxLength + 1) });
  if (typeof s.pattern === 'string') out.push({ path, what: 'a name not of its form', value: 'Not A#Name#' });
  if (typeof s.minLength === 'number' && s.minLength > 0) out.push({ path, what: 'empty', value: '' });
  return out;
}

function objectMutations(s: Schema, value: Record<string, unknown>, path: (string | number)[]): Mutation[] {
  const properties = (s.properties ?? {}) as Record<string, TSchema>;
  const out: Mutation[] = [];
  if (s.additionalProperties === false) out.push({ path: [...path, 'fuzzExtra'], what: 'an extra field', value: 1 });
  for (const [k, p] of Object.entries(properties)) {
    if (!(p as Schema)[OptionalKind]) out.push({ path: [...path, k], what: 'missing', value: REMOVE });
    if (value[k] !== undefined) out.push(...mutationsOf(p, value[k], [...path, k]));
  }
  return out;
}

/** `value` with `mutation` applied (a deep copy: the valid value stays as it was). */
export function mutated(value: unknown, mutation: Mutation): unknown {
  if (mutation.path.length === 0) return mutation.value;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let at = copy;
  for (const key of mutation.path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  const last = mutation.path[mutation.path.length - 1];
  if (mutation.value === REMOVE) delete at[last];
  else at[last] = mutation.value;
  return copy;
}
