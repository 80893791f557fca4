/**
 * configs/schema.json is the loader's own schema as JSON Schema (editors validate configs with it): it is in sync
 * with the code, every shipped config passes it, and keys the loader refuses are refused by it too.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { stageGraphJsonSchema } from '../../src/config/jsonSchema.ts';

const CONFIGS = join(import.meta.dirname, '..', '..', 'configs');
const shipped = JSON.parse(readFileSync(join(CONFIGS, 'schema.json'), 'utf8')) as object;
// errorMessage is the loader's wording for a failed value; to a JSON Schema validator it is an annotation.
const validate = new Ajv({ allErrors: true, strict: false }).compile(shipped);

const valid = `stages:
  - stage_id: thinker
    kind: thinker
    model: {preset: tiny, hidden_size: 128}
    final_output: true
    final_output_type: text
`;

describe('configs/schema.json', () => {
  it("is what the loader's schema generates (run `npm run schema` after changing it)", () => {
    expect(shipped).toEqual(stageGraphJsonSchema());
  });

  it.each(readdirSync(CONFIGS).filter((f) => f.endsWith('.yaml')))('%s passes it and names it', (file) => {
    const text = readFileSync(join(CONFIGS, file), 'utf8');
    expect(text.split('\n')[0]).toBe('# yaml-language-server: $schema=./schema.json');
    expect(validate(parse(text))).toBe(true);
  });

  it.each([
    ['a misspelt top-level key', valid.replace('stages:', 'async_chunks: true\nstages:')],
    ['a misspelt stage key', valid.replace('final_output: true', 'final_output: true\n    replica: 2')],
    ['a misspelt model size', valid.replace('hidden_size', 'hiden_size')],
    ['worker_type, which the kind decides', valid.replace('kind: thinker', 'kind: thinker\n    worker_type: ar')],
    ['an unknown stage kind', valid.replace('kind: thinker', 'kind: thinkr')],
    ['an unknown connector kind', `connectors:\n  r: {kind: nats}\n${valid}`],
    ['a redis url of another scheme', `connectors:\n  r: {kind: redis, options: {url: 'http://x'}}\n${valid}`],
  ])('refuses %s, as the loader does', (_, yaml) => {
    expect(validate(parse(yaml))).toBe(false);
    expect(() => parseConfig(yaml, 'x.yaml')).toThrow(expect.objectContaining({ code: 'CHORUS_ERR_CONFIG_INVALID' }));
  });

  it('accepts the valid graph those come from', () => {
    expect(validate(parse(valid))).toBe(true);
    expect(parseConfig(valid, 'x.yaml').stages[0].stageId).toBe('thinker');
  });
});
