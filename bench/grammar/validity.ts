/**
 * `node --import tsx bench/grammar/validity.ts [--answers 200] [--preset omni]` — the validity goal on the real
 * generated Thinker (random weights) at temperature 1: N answers under a JSON schema with nested objects, arrays and
 * enums, and N forced tool calls (tool_choice required, two tools); each answer's text parsed and validated with ajv.
 * Eight answers decode together, each with its own seed; an answer that reaches the cap counts as not ended.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Ajv } from 'ajv';
import {
  ByteTokenizer,
  byteTokenizerVocab,
  createThinkerRunner,
  GrammarEngine,
  type GrammarSpec,
  jsonSchemaSpec,
  type SamplingParams,
  ToolCallAssembly,
  ToolCallStream,
  toolGrammar,
} from '../../src/index.ts';
import { GREEDY_SAMPLING } from '../../src/basics.ts';
import { gitSha } from '../common.ts';

const { values } = parseArgs({
  options: { answers: { type: 'string', default: '200' }, preset: { type: 'string', default: 'omni' } },
});
const N = Number(values.answers);
const CAP = 400;

const ORDER = {
  type: 'object',
  properties: {
    customer: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 16 }, tier: { enum: ['gold', 'silver'] } },
      required: ['name', 'tier'],
    },
    items: {
      type: 'array',
      items: {
        type: 'object',
        properties: { sku: { type: 'string', pattern: '^[A-Z]{3}[0-9]{2}$' }, qty: { type: 'integer', minimum: 1 } },
        required: ['sku', 'qty'],
      },
      minItems: 1,
      maxItems: 3,
    },
    gift: { type: 'boolean' },
  },
  required: ['customer', 'items', 'gift'],
};
const WEATHER = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 20 }, unit: { enum: ['celsius', 'fahrenheit'] } },
  required: ['city', 'unit'],
};
const TIME = { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] };
const tools = [
  { name: 'get_weather', parameters: WEATHER },
  { name: 'get_time', parameters: TIME },
];

const { presets } = await import('../../src/index.ts');
const size = (presets as Record<string, { thinker: { vocabSize: number } }>)[values.preset!].thinker;
const model = { source: 'generated', kind: 'thinker', preset: values.preset, seed: 0, size };
const spec = { model, engine: { threads: 1 } } as unknown as Parameters<typeof createThinkerRunner>[0];
const runner = await createThinkerRunner(spec, join(tmpdir(), 'chorus-bench-models'));
const tokenizer = new ByteTokenizer(runner.vocabSize);
const engine = await GrammarEngine.create(byteTokenizerVocab(tokenizer), runner.vocabSize);
const prompt = tokenizer.applyChatTemplate([{ role: 'user', content: 'Answer, please.' }], tools);
const base: SamplingParams = { ...GREEDY_SAMPLING, temperature: 1, maxTokens: CAP };

/** N answers' texts under the grammar (null: reached the cap), eight at a time. */
async function answers(grammar: GrammarSpec): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  for (let first = 0; first < N; first += 8) {
    const seeds = Array.from({ length: Math.min(8, N - first) }, (_, k) => first + k + 1);
    const ids = seeds.map((s) => `v${s}-${grammar.type}`);
    const gs = await Promise.all(seeds.map(() => engine.open(grammar)));
    const texts: number[][] = seeds.map(() => []);
    const done: (boolean | null)[] = seeds.map(() => null);
    const inputs = seeds.map(() => prompt);
    for (let step = 0; step < CAP && done.some((d) => d === null); step++) {
      const live = seeds.map((_, k) => k).filter((k) => done[k] === null);
      const outs = runner.execute(
        live.map((k) => ({
          seqId: ids[k],
          tokenIds: inputs[k],
          numTokens: inputs[k].length,
          sample: true,
          sampling: { ...base, seed: seeds[k] },
          allowedTokens: gs[k].mask(),
        })),
      );
      outs.forEach((o, i) => {
        const k = live[i];
        const id = o.tokenId!;
        if (!gs[k].accept(id)) throw new Error(`token ${id} outside the grammar`);
        if (gs[k].terminated) done[k] = true;
        else texts[k].push(id);
        inputs[k] = [id];
      });
    }
    seeds.forEach((_, k) => {
      out.push(done[k] ? tokenizer.decode(texts[k]) : null);
      gs[k].dispose();
      runner.free(ids[k]);
    });
  }
  return out;
}

const ajv = new Ajv({ strict: false });
const validOrder = ajv.compile(ORDER);
const json = await answers(jsonSchemaSpec(ORDER, 'schema'));
const jsonValid = json.filter((t) => t !== null && validOrder(JSON.parse(t))).length;

const calls = await answers(toolGrammar(tools, { atLeastOne: true, stopAfterFirst: true }));
let callsValid = 0;
for (const text of calls) {
  if (text === null) continue;
  const stream = new ToolCallStream();
  const a = new ToolCallAssembly();
  a.add(stream.push(text));
  a.add(stream.finish());
  const schema = { get_weather: WEATHER, get_time: TIME }[a.calls[0]?.name ?? ''];
  if (a.calls.length === 1 && schema && ajv.validate(schema, JSON.parse(a.calls[0].arguments))) callsValid++;
}
console.log(
  JSON.stringify(
    {
      git: gitSha(),
      preset: values.preset,
      answers: N,
      jsonSchema: { ended: json.filter((t) => t !== null).length, valid: jsonValid },
      forcedToolCalls: { ended: calls.filter((t) => t !== null).length, valid: callsValid },
      example: { json: json.find((t) => t !== null), call: calls.find((t) => t !== null) },
    },
    null,
    2,
  ),
);
engine.dispose();
await runner.close();
