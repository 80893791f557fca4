/**
 * An integer the schema leaves unbounded is held to I-JSON's range (src/grammar/safeIntegers.ts), wherever it sits
 * (properties, array items, anyOf branches, $defs); bounds, enums and consts the schema gives are kept, numbers are
 * left alone, and the caller's schema is not changed.
 */
import { describe, expect, it } from 'vitest';
import { boundIntegers } from '../../src/grammar/safeIntegers.ts';

const SAFE = Number.MAX_SAFE_INTEGER;
const BOUNDED = { type: 'integer', minimum: -SAFE, maximum: SAFE };

describe('boundIntegers', () => {
  it('bounds every unbounded integer, however deep, and leaves the rest as given', () => {
    const schema = {
      type: 'object',
      properties: {
        qty: { type: 'integer' },
        small: { type: 'integer', minimum: 1, exclusiveMaximum: 10 },
        price: { type: 'number' },
        kind: { type: 'integer', enum: [1, 2] },
        list: { type: 'array', items: { type: 'integer' } },
        either: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
        ref: { $ref: '#/$defs/count' },
      },
      $defs: { count: { type: ['integer', 'null'] } },
    };
    const before = structuredClone(schema);
    const out = boundIntegers(schema) as typeof schema & { properties: Record<string, unknown> };
    expect(schema).toEqual(before);
    expect(out.properties.qty).toEqual(BOUNDED);
    expect(out.properties.small).toEqual({ type: 'integer', minimum: 1, exclusiveMaximum: 10 });
    expect(out.properties.price).toEqual({ type: 'number' });
    expect(out.properties.kind).toEqual({ type: 'integer', enum: [1, 2] });
    expect(out.properties.list).toEqual({ type: 'array', items: BOUNDED });
    expect(out.properties.either).toEqual({ anyOf: [BOUNDED, { type: 'string' }] });
    expect(out.$defs.count).toEqual({ type: ['integer', 'null'], minimum: -SAFE, maximum: SAFE });
  });
});
