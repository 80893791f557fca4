/**
 * TypeBox building blocks for the YAML schemas (the stage graph's, and each stage kind's model section).
 * Objects are closed (additionalProperties: false) so a misspelt key is an error, not an ignored setting;
 * `errorMessage` is the text shown when a value fails, in place of TypeBox's generic wording.
 */
import { Type, type TInteger, type TLiteral, type TOptional, type TSchema, type TUnion } from '@sinclair/typebox';
import { WEIGHT_FORMS, type WeightForm } from './modelSpec.ts';

export const closed = { additionalProperties: false } as const;

/** A string enum whose static type is the union of its values. */
export function oneOf<const T extends readonly string[]>(values: T): TUnion<TLiteral<T[number]>[]> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { errorMessage: `must be one of ${values.join(', ')}` },
  );
}

export const int = (minimum: number, description?: string) => Type.Integer({ minimum, description });
export const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);

/** An integer count of bytes, or a string with a binary unit ("256MiB"); see parseByteSize. */
export const ByteSize = Type.Union(
  [Type.Integer({ minimum: 1 }), Type.String({ pattern: '^\\s*\\d+(\\.\\d+)?\\s*(B|KiB|MiB|GiB|KB|MB|GB)\\s*$' })],
  {
    errorMessage: 'must be a byte count: a positive integer or a string like "64MiB" (B, KiB, MiB, GiB, KB, MB, GB)',
  },
);

const byteUnits: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  KiB: 1024,
  MiB: 1024 ** 2,
  GiB: 1024 ** 3,
};

/** 268435456 or "256MiB" -> bytes. The schema has already checked the shape. */
export function parseByteSize(value: number | string): number {
  if (typeof value === 'number') return value;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*$/.exec(value);
  if (!match) throw new Error(`not a byte size: ${value}`);
  return Math.round(Number(match[1]) * byteUnits[match[2]]);
}

/** Every generated model: which preset it starts from, and its weights' seed. */
export const generatedCommon = { preset: optional(Type.String({ minLength: 1 })), seed: optional(int(0)) };

/** Size overrides of a generated model, by name (snake_case fields of its size): each an optional integer >= 1. */
export function sizeOverrides<const K extends string>(...names: K[]): Record<K, TOptional<TInteger>> {
  return Object.fromEntries(names.map((name) => [name, optional(int(1))])) as Record<K, TOptional<TInteger>>;
}

/** Size overrides of a generated transformer (snake_case fields of ThinkerSize, TalkerSize, ...). */
export const transformer = {
  ...sizeOverrides('hidden_size', 'num_layers', 'num_heads', 'intermediate_size', 'max_positions'),
  logit_scale: optional(Type.Number({ exclusiveMinimum: 0 })),
  weights: optional(oneOf(WEIGHT_FORMS)),
};

/** { hidden_size: 64, preset: 'x' } -> { hiddenSize: 64 }: the size overrides of a model section, camelCase. */
export function camelSizes(
  raw: Readonly<Record<string, unknown>>,
  skip: readonly string[] = [],
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (key === 'preset' || key === 'seed' || skip.includes(key)) continue;
    if (typeof value === 'number') out[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  return out;
}

/** A transformer's `weights:` (already checked by its schema), as a size field; none when the section has none. */
export function weightsOverride(raw: Readonly<Record<string, unknown>>): { weights?: WeightForm } {
  return typeof raw.weights === 'string' ? { weights: raw.weights as WeightForm } : {};
}
