/**
 * Structured outputs and function tools through the official openai SDK against the real Thinker with random weights
 * (configs/text-only.yaml): under a grammar every answer parses and validates (ajv) whatever the model would have
 * said, a forced call names its tool with valid arguments, the SDK assembles streamed calls, and a conversation
 * carrying calls and their results is rendered and answered.
 */
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configWith } from '../helpers/engine.ts';
import { fetchAdmitted } from '../helpers/fetchAdmitted.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

let served: ServedPipeline | undefined;
let sdk: OpenAI;

beforeAll(async () => {
  served = await servePipeline(configWith('text-only.yaml'));
  // A 429 (the admission's bound on a loaded machine: five at once met a bound of four in a CI run) is retried after
  // its Retry-After, as the SDK's own retries would; any other error fails the test.
  sdk = new OpenAI({ baseURL: `${served.base}/v1`, apiKey: 'none', maxRetries: 0, fetch: fetchAdmitted() });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const ajv = new Ajv({ strict: false });
const MODEL = 'chorus-text-only';

/** Nested objects, arrays and enums; strings bounded, so that random text ends within the cap. */
const ORDER = {
  type: 'object',
  properties: {
    customer: {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 16 }, tier: { enum: ['gold', 'silver'] } },
      required: ['name', 'tier'],
      additionalProperties: false,
    },
    items: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          sku: { type: 'string', pattern: '^[A-Z]{3}[0-9]{2}$' },
          qty: { type: 'integer', minimum: 1, maximum: 9 },
        },
        required: ['sku', 'qty'],
        additionalProperties: false,
      },
      minItems: 1,
      maxItems: 3,
    },
    gift: { type: 'boolean' },
  },
  required: ['customer', 'items', 'gift'],
  additionalProperties: false,
};

const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 20 },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    unit: { enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city', 'days', 'unit'],
  additionalProperties: false,
};
const TIME = { type: 'object', properties: { zone: { enum: ['UTC', 'CET'] } }, required: ['zone'] };
const tools = [
  { type: 'function', function: { name: 'get_weather', parameters: WEATHER } },
  { type: 'function', function: { name: 'get_time', description: 'the time now', parameters: TIME } },
] as const;
const schemaOf = { get_weather: WEATHER, get_time: TIME } as Record<string, object>;

const messages = [{ role: 'user', content: 'Place my order please.' }] as const;

/** ask(0..n-1) with `width` of them in flight at a time (the next starts as one ends); the answers in that order. */
async function inFlight<T>(n: number, width: number, ask: (i: number) => Promise<T>): Promise<T[]> {
  const answers: T[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) answers[i] = await ask(i);
  };
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker));
  return answers;
}

describe('response_format json_schema', () => {
  it('50 answers at temperature 1.0 all parse and validate', async () => {
    const validate = ajv.compile(ORDER);
    const ask = (seed: number) =>
      sdk.chat.completions.create({
        model: MODEL,
        messages: [...messages],
        temperature: 1,
        seed,
        max_tokens: 200,
        response_format: { type: 'json_schema', json_schema: { name: 'order', schema: ORDER, strict: true } },
      });
    // Ten in flight (under the admission queue's bound on a loaded machine), the next sent as one ends: not in
    // batches of ten that each wait for their longest answer.
    const answers = await inFlight(50, 10, ask);
    for (const a of answers) {
      expect(a.choices[0].finish_reason).toBe('stop');
      const value: unknown = JSON.parse(a.choices[0].message.content!);
      expect(validate(value), `${a.choices[0].message.content}: ${JSON.stringify(validate.errors)}`).toBe(true);
    }
    // Random weights: the answers differ (the grammar constrains, the sampler still samples).
    expect(new Set(answers.map((a) => a.choices[0].message.content)).size).toBeGreaterThan(10);
  });

  it('json_object gives a JSON object, streamed too', async () => {
    const stream = await sdk.chat.completions.create({
      model: MODEL,
      messages: [...messages],
      max_tokens: 300,
      response_format: { type: 'json_object' },
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(['{', '['].includes(text[0])).toBe(true);
  });

  it('a schema keyword the grammar cannot enforce is a 400 naming it', async () => {
    const bad = { type: 'object', properties: { n: { type: 'integer', multipleOf: 5 } } };
    const err = await sdk.chat.completions
      .create({
        model: MODEL,
        messages: [...messages],
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: bad } },
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.status).toBe(400);
    expect(e.code).toBe('CHORUS_ERR_GRAMMAR_UNSUPPORTED');
    expect(e.message).toContain('multipleOf');
  });
});

describe('tools', () => {
  it('a named tool_choice forces a valid call of that tool (finish_reason tool_calls)', async () => {
    const validate = ajv.compile(WEATHER);
    // Five seeds at once: the Thinker decodes them in one batch instead of five answers one after another.
    const answers = await inFlight(5, 5, (seed) =>
      sdk.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
        temperature: 1,
        seed,
        max_tokens: 120,
        tools: [...tools],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
      }),
    );
    for (const c of answers) {
      const choice = c.choices[0];
      expect(choice.finish_reason).toBe('tool_calls');
      expect(choice.message.tool_calls).toHaveLength(1);
      const call = choice.message.tool_calls![0];
      if (call.type !== 'function') throw new Error('not a function call');
      expect(call.function.name).toBe('get_weather');
      expect(call.id).toMatch(/^call_/);
      expect(validate(JSON.parse(call.function.arguments))).toBe(true);
    }
  });

  it('required: the SDK assembles the streamed calls into the calls of the same answer unstreamed', async () => {
    const ask = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'Weather and time?' }],
      temperature: 1,
      seed: 7,
      max_tokens: 400,
      tools: [...tools],
      tool_choice: 'required' as const,
    };
    const whole = await sdk.chat.completions.create(ask);
    const streamed = await sdk.chat.completions.stream(ask).finalChatCompletion();
    const calls = (c: typeof whole) =>
      (c.choices[0].message.tool_calls ?? []).map((t) =>
        t.type === 'function' ? [t.function.name, t.function.arguments] : [],
      );
    expect(calls(whole).length).toBeGreaterThan(1); // random weights call again and again (parallel calls)
    expect(calls(streamed)).toEqual(calls(whole));
    const reason = whole.choices[0].finish_reason;
    expect(streamed.choices[0].finish_reason).toBe(reason);
    // Cut by max_tokens (random weights rarely stop calling): every call but the cut one is whole and valid.
    const whole_ = reason === 'length' ? calls(whole).slice(0, -1) : calls(whole);
    expect(['length', 'tool_calls']).toContain(reason);
    for (const [name, args] of whole_) expect(ajv.validate(schemaOf[name], JSON.parse(args))).toBe(true);
  });

  it('parallel_tool_calls false: exactly one call', async () => {
    const answers = await inFlight(5, 5, (seed) =>
      sdk.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: 'Time?' }],
        temperature: 1,
        seed,
        max_tokens: 200,
        tools: [...tools],
        tool_choice: 'required',
        parallel_tool_calls: false,
      }),
    );
    for (const c of answers) expect(c.choices[0].message.tool_calls).toHaveLength(1);
  });

  it('auto: the model decides; random weights write text, and any call they start is held to the grammar', async () => {
    const c = await sdk.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello there.' }],
      max_tokens: 24,
      tools: [...tools],
      tool_choice: 'auto',
    });
    const m = c.choices[0].message;
    const validate = (name: string, args: string) => ajv.validate(schemaOf[name], JSON.parse(args));
    for (const t of m.tool_calls ?? [])
      if (t.type === 'function') expect(validate(t.function.name, t.function.arguments)).toBe(true);
    expect(c.choices[0].finish_reason).toBe(m.tool_calls?.length ? 'tool_calls' : c.choices[0].finish_reason);
    expect(typeof m.content === 'string' || (m.tool_calls?.length ?? 0) > 0).toBe(true);
  });

  it('a history with an assistant call and its tool result is rendered and answered', async () => {
    const c = await sdk.chat.completions.create({
      model: MODEL,
      max_tokens: 8,
      tools: [...tools],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'get_weather', arguments: '{"city": "Paris", "days": 1, "unit": "celsius"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
      ],
    });
    expect(c.choices[0].message.role).toBe('assistant');
    expect(c.usage!.prompt_tokens).toBeGreaterThan(40); // the tools block, the call and its result are in the prompt
  });
});

describe('logprobs', () => {
  type Entry = OpenAI.Chat.Completions.ChatCompletionTokenLogprob;
  /** Each entry's shape and sense: logprobs <= 0, the top list sorted, the chosen one's value in it when listed. */
  const checkEntries = (entries: readonly Entry[], k: number, greedy: boolean): void => {
    for (const e of entries) {
      expect(e.logprob).toBeLessThanOrEqual(0);
      expect(Buffer.from(e.bytes!).toString('utf8').replaceAll('\ufffd', '')).toBe(e.token.replaceAll('\ufffd', ''));
      expect(e.top_logprobs).toHaveLength(k);
      const values = e.top_logprobs.map((t) => t.logprob);
      expect(values).toEqual([...values].sort((a, b) => b - a));
      for (const t of e.top_logprobs) expect(t.logprob).toBeLessThanOrEqual(0);
      const listed = e.top_logprobs.find((t) => t.token === e.token && t.bytes!.join() === e.bytes!.join());
      if (listed) expect(listed.logprob).toBeCloseTo(e.logprob, 5);
      if (greedy) expect(e.top_logprobs[0]).toMatchObject({ token: e.token, bytes: e.bytes });
    }
  };
  const ask = { model: MODEL, messages: [{ role: 'user' as const, content: 'count to five' }], max_tokens: 12 };

  it('non-streamed: one entry per token, top_logprobs long, the greedy choice its top 1', async () => {
    const r = await sdk.chat.completions.create({ ...ask, temperature: 0, logprobs: true, top_logprobs: 3 });
    const lp = r.choices[0].logprobs!;
    expect(lp.refusal).toBeNull();
    expect(lp.content).toHaveLength(r.usage!.completion_tokens);
    checkEntries(lp.content!, 3, true);
    const plain = await sdk.chat.completions.create({ ...ask, temperature: 0 });
    expect(plain.choices[0].logprobs).toBeNull();
    expect(plain.choices[0].message.content).toBe(r.choices[0].message.content);
  });

  it("streamed: each chunk carries its delta's tokens; together, every token", async () => {
    const stream = await sdk.chat.completions.create({
      ...ask,
      temperature: 1,
      seed: 7,
      logprobs: true,
      top_logprobs: 2,
      stream: true,
      stream_options: { include_usage: true },
    });
    const entries: Entry[] = [];
    let usage = 0;
    for await (const chunk of stream) {
      entries.push(...(chunk.choices[0]?.logprobs?.content ?? []));
      usage = chunk.usage?.completion_tokens ?? usage;
    }
    expect(entries).toHaveLength(usage);
    checkEntries(entries, 2, false);
  });
});
