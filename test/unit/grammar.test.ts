/**
 * Grammar-constrained sampling over the project's tokenizers, with xgrammar's WebAssembly build: every answer parses
 * and validates (ajv) whatever the logits, a schema compiles once, and schemas the grammar cannot enforce are refused
 * by keyword.
 */
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import type { GrammarSpec } from '../../src/common/engine.ts';
import {
  GrammarEngine,
  byteTokenizerVocab,
  checkGrammar,
  hfTokenizerVocab,
  jsonSchemaSpec,
} from '../../src/grammar/index.ts';
import { ByteTokenizer, HfTokenizer } from '../../src/tokenizer/index.ts';
import { randomWalk } from '../helpers/grammarWalk.ts';
import { byteLevelTokenizerJson } from '../helpers/byteLevelTokenizer.ts';

/** Nested objects, arrays and enums; strings and numbers bounded so that random text ends. */
const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 99 },
    role: { enum: ['admin', 'user', 'guest'] },
    address: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 10 }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
      required: ['city', 'zip'],
      additionalProperties: false,
    },
    tags: { type: 'array', items: { enum: ['red', 'green', 'blue'] }, maxItems: 4 },
    score: { anyOf: [{ type: 'number' }, { type: 'null' }] },
  },
  required: ['name', 'age', 'role', 'address', 'tags'],
  additionalProperties: false,
};

const validate = new Ajv({ strict: false }).compile(PERSON);

describe("grammar over the generated models' byte tokenizer", () => {
  const tokenizer = new ByteTokenizer(2048);
  let engine: GrammarEngine;
  beforeAll(async () => {
    engine = await GrammarEngine.create(byteTokenizerVocab(tokenizer), 2048);
  });

  it('50 random answers at temperature 1 all parse and validate against a nested schema', async () => {
    const spec = jsonSchemaSpec(PERSON, 'schema');
    for (let seed = 1; seed <= 50; seed++) {
      const grammar = await engine.open(spec);
      const walk = randomWalk(grammar, 2048, seed);
      grammar.dispose();
      expect(walk.terminated, `answer ${seed} ended`).toBe(true);
      const text = tokenizer.decode(walk.tokenIds);
      const value: unknown = JSON.parse(text);
      expect(validate(value), `${text}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(walk.tokenIds.some((id) => tokenizer.isSpecialToken(id))).toBe(false);
    }
  });

  it('json_object gives JSON objects', async () => {
    for (let seed = 1; seed <= 5; seed++) {
      const grammar = await engine.open({ type: 'json_object' });
      // Any JSON never has to end: the cap stops it, and the prefix must still be a JSON prefix (checked on ends).
      const walk = randomWalk(grammar, 2048, seed, 400);
      grammar.dispose();
      if (walk.terminated) expect(typeof JSON.parse(tokenizer.decode(walk.tokenIds))).toBe('object');
      expect(['{', '['].includes(tokenizer.decode(walk.tokenIds).trimStart()[0])).toBe(true);
    }
  });

  it('compiles a schema once: the second request takes the cache, and the cache is bounded', async () => {
    const small = await GrammarEngine.create(byteTokenizerVocab(tokenizer), 2048, 2);
    const spec = (n: number): GrammarSpec =>
      jsonSchemaSpec({ type: 'object', properties: { [`k${n}`]: { type: 'integer' } } }, 's');
    (await small.open(spec(1))).dispose();
    (await small.open(spec(1))).dispose();
    expect(small.stats).toMatchObject({ compiles: 1, cacheHits: 1, cached: 1 });
    (await small.open(spec(2))).dispose();
    (await small.open(spec(3))).dispose();
    expect(small.stats).toMatchObject({ compiles: 3, cached: 2 });
    (await small.open(spec(1))).dispose(); // evicted as the least recently used: compiled again
    expect(small.stats.compiles).toBe(4);
    small.dispose();
  });
});

describe('grammar over a Hugging Face byte-level BPE tokenizer.json', () => {
  it('answers validate and never contain a special token', async () => {
    const { json, config } = byteLevelTokenizerJson();
    const tokenizer = new HfTokenizer(json, config);
    const vocab = hfTokenizerVocab(json, tokenizer, 'test');
    expect(vocab.vocabType).toBe('byte_level');
    const vocabSize = tokenizer.vocabSize + 7; // logits padded past the vocabulary, as exports often are
    const engine = await GrammarEngine.create(vocab, vocabSize);
    for (let seed = 1; seed <= 20; seed++) {
      const grammar = await engine.open(jsonSchemaSpec(PERSON, 'schema'));
      const walk = randomWalk(grammar, vocabSize, seed);
      grammar.dispose();
      expect(walk.terminated).toBe(true);
      expect(walk.tokenIds.every((id) => id < tokenizer.vocabSize && !tokenizer.isSpecialToken(id))).toBe(true);
      expect(validate(JSON.parse(tokenizer.decode(walk.tokenIds)))).toBe(true);
    }
    engine.dispose();
  });
});

describe('schemas the grammar cannot enforce', () => {
  const refused = (schema: unknown) => {
    try {
      jsonSchemaSpec(schema, 'response_format.json_schema.schema');
    } catch (err) {
      return err as { code: string; message: string };
    }
    return null;
  };

  it('names the keyword and where it is', () => {
    const err = refused({ type: 'object', properties: { ids: { type: 'array', uniqueItems: true } } });
    expect(err?.code).toBe(ErrorCodes.GRAMMAR_UNSUPPORTED);
    expect(err?.message).toContain('response_format.json_schema.schema.properties.ids.uniqueItems');
    expect(refused({ type: 'integer', multipleOf: 3 })?.message).toContain('"multipleOf"');
    expect(refused({ type: 'number', maximum: 1 })?.message).toContain('integers only');
    expect(refused({ type: 'string', format: 'idn-email' })?.message).toContain('format "idn-email"');
    expect(refused({ type: 'object', title: 'x', description: 'y', $defs: { a: { type: 'string' } } })).toBeNull();
  });

  it("passes on xgrammar's own refusal with its reason", async () => {
    const bad = checkGrammar(
      { type: 'json_schema', schema: '{"type": "object", "properties": {"a": {"$ref": "#/nope"}}}' },
      'schema',
    );
    await expect(bad).rejects.toMatchObject({
      code: ErrorCodes.GRAMMAR_INVALID,
      message: expect.stringContaining('nope'),
    });
    const range = checkGrammar({ type: 'json_schema', schema: '{"type": "integer", "minimum": 5, "maximum": 2}' }, 's');
    await expect(range).rejects.toMatchObject({
      code: ErrorCodes.GRAMMAR_INVALID,
      message: expect.stringContaining('minimum'),
    });
    // The module survives its aborts: a good schema still checks.
    await expect(checkGrammar(jsonSchemaSpec(PERSON, 's'), 's')).resolves.toBeUndefined();
  });

  it('refuses allOf with several subschemas (xgrammar would not merge them)', async () => {
    const spec = jsonSchemaSpec({ allOf: [{ type: 'object' }, { required: ['a'] }] }, 'schema');
    await expect(checkGrammar(spec, 'schema')).rejects.toMatchObject({ code: ErrorCodes.GRAMMAR_UNSUPPORTED });
  });
});
