/**
 * Every sampling field a chat request may carry, against the real Thinker (configs/text-only.yaml) through the
 * official openai SDK: each is honored (the answer changes as the field says) or refused with a 400 naming it; so
 * are what Chorus cannot do (log probabilities, stop sequences; tools and structured output asked for wrongly),
 * while fields that change nothing in an answer (user, metadata, store...) are taken.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configWith } from '../helpers/engine.ts';
import { createTokenizer } from '../../src/tokenizer/createTokenizer.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

let served: ServedPipeline | undefined;
let sdk: OpenAI;

beforeAll(async () => {
  served = await servePipeline(configWith('text-only.yaml'));
  sdk = new OpenAI({ baseURL: `${served.base}/v1`, apiKey: 'none', maxRetries: 0 });
}, 120_000);

afterAll(async () => {
  await served?.close();
});

type Extra = Record<string, unknown>;
/**
 * 12 tokens of an answer to a fixed question (ignore_eos: random weights would stop anywhere). The question is one
 * whose greedy answer repeats its second word (the logit_bias test checks that it does): the penalties' tests need a
 * repeated word to take out, and which questions loop depends on the generated weights.
 */
async function answer(extra: Extra = {}): Promise<{ text: string; tokens: number }> {
  const c = await sdk.chat.completions.create({
    model: 'chorus-text-only',
    messages: [{ role: 'user', content: 'What is the weather like?' }],
    max_tokens: 12,
    ...({ ignore_eos: true, ...extra } as object),
  });
  return { text: c.choices[0].message.content ?? '', tokens: c.usage!.completion_tokens };
}

async function refusal(extra: Extra): Promise<{ status: number; param: string | null; message: string }> {
  try {
    await answer(extra);
  } catch (err) {
    if (!(err instanceof OpenAI.APIError)) throw err;
    const e = err.error as { param: string | null; message: string };
    return { status: err.status ?? 0, param: e.param, message: e.message };
  }
  throw new Error(`${JSON.stringify(extra)} was not refused`);
}

const tool = {
  type: 'function',
  function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
} as const;

const words = (text: string) => text.trim().split(/\s+/);
const count = (text: string, word: string) => words(text).filter((w) => w === word).length;
/** The token id of one word (with its leading space, as the model writes it mid-sentence). */
function idOf(word: string): number {
  const ids = createTokenizer(served!.engine.graph.stages[0].model, 512).encode(` ${word}`);
  expect(ids).toHaveLength(1);
  return ids[0];
}

describe('sampling fields on chat completions', () => {
  let greedy: string;
  beforeAll(async () => {
    greedy = (await answer()).text;
  });

  it('temperature with a seed: a different answer than greedy, the same one for the same seed', async () => {
    const a = await answer({ temperature: 1.5, seed: 11 });
    expect(a.text).not.toBe(greedy);
    expect((await answer({ temperature: 1.5, seed: 11 })).text).toBe(a.text);
    expect((await answer({ temperature: 1.5, seed: 12 })).text).not.toBe(a.text);
  });

  it('top_p and top_k narrow a hot sampler down to the greedy answer', async () => {
    expect((await answer({ temperature: 1.5, seed: 11, top_p: 1e-6 })).text).toBe(greedy);
    expect((await answer({ temperature: 1.5, seed: 11, top_k: 1 })).text).toBe(greedy);
  });

  it('max_tokens and max_completion_tokens bound the answer', async () => {
    expect((await answer({ max_tokens: 5 })).tokens).toBe(5);
    expect((await answer({ max_tokens: undefined, max_completion_tokens: 7 })).tokens).toBe(7);
  });

  it('logit_bias pushes a token up (+100) or bans it (-100)', async () => {
    const word = words(greedy)[1]; // the greedy answer repeats its second word (random weights loop)
    const id = String(idOf(word));
    expect(count(greedy, word)).toBeGreaterThan(1);
    expect(count((await answer({ logit_bias: { [id]: -100 } })).text, word)).toBe(0);
    const other = String(idOf('not'));
    expect(count((await answer({ logit_bias: { [other]: 100 } })).text, 'not')).toBeGreaterThanOrEqual(10);
  });

  it('frequency and repetition penalties take repeated words out of a repetitive greedy answer', async () => {
    const word = words(greedy)[1];
    for (const penalty of [{ frequency_penalty: 2 }, { repetition_penalty: 10 }]) {
      const penalized = (await answer(penalty)).text;
      expect({ ...penalty, fewer: count(penalized, word) < count(greedy, word) }).toEqual({ ...penalty, fewer: true });
    }
  });

  it('presence penalty reshapes a sampled answer (same seed, same draws, different odds)', async () => {
    // At this model's logit scale a penalty of 2 rarely flips a greedy choice; a sampled one it does.
    const hot = { temperature: 1, seed: 3 };
    const plain = (await answer(hot)).text;
    expect((await answer({ ...hot, presence_penalty: 2 })).text).not.toBe(plain);
    expect((await answer({ ...hot, presence_penalty: 0 })).text).toBe(plain);
  });

  it.each([
    [{ stop: ['\n'] }, 'stop'],
    [{ stop: 'the end' }, 'stop'],
    [{ n: 2 }, 'n'],
    [{ temperature: 3 }, 'temperature'],
    [{ logit_bias: { abc: 1 } }, 'logit_bias'],
    [{ frequency_penalty: 5 }, 'frequency_penalty'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tool_choice: { type: 'function', function: { name: 'weather' } } }, 'tool_choice'],
    [{ functions: [tool.function] }, 'functions'],
    [{ tools: [tool], tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice.function.name'],
    [{ tools: [tool], response_format: { type: 'json_object' } }, 'response_format'],
    [
      { response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { uniqueItems: true } } } },
      'uniqueItems',
    ],
    [{ response_format: { type: 'xml' } }, 'response_format'],
    [{ top_logprobs: 3 }, 'top_logprobs'], // without logprobs: true, as OpenAI
    [{ logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    [{ temprature: 0.5 }, 'temprature'],
    [{ cache_salt: 42 }, 'cache_salt'],
    [{ cache_salt: '' }, 'cache_salt'],
    [{ reasoning_effort: 'high' }, 'reasoning_effort'],
    [{ web_search_options: {} }, 'web_search_options'],
  ] as const)('%j is refused with a 400 naming %s', async (extra, param) => {
    const r = await refusal(extra);
    expect(r.status).toBe(400);
    expect(r.param ?? r.message).toContain(param);
  });

  it('fields that change nothing in an answer are taken, and the answer is the one without them', async () => {
    const inert = {
      tools: [tool],
      tool_choice: 'none',
      response_format: { type: 'text' },
      logprobs: false,
      user: 'u-1',
      metadata: { run: 'test' },
      store: false,
      service_tier: 'auto',
      parallel_tool_calls: false,
      safety_identifier: 's-1',
      prompt_cache_key: 'k-1',
      prediction: null,
      reasoning_effort: null,
      cache_salt: 'tenant-a', // a partition of the cache: the answer is the same
    };
    expect((await answer(inert)).text).toBe(greedy);
  });
});
