/**
 * Realtime function tools through the official openai SDK's realtime client, on a real pipeline with random weights:
 * a forced call comes as a function_call item (arguments streamed, whole JSON of the tool's schema, never spoken),
 * ends its response and is listed by response.done; the client's function_call_output goes into the next answer's
 * prompt; and a call cancelled mid-arguments leaves the conversation as if it had never begun.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { sdkSession, tlsPipelineForFile, type Event } from '../helpers/realtimeSdk.ts';

const pipeline = tlsPipelineForFile('tiny-omni-text-in.yaml');

const WEATHER = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit', 'days'],
  additionalProperties: false,
};
const TOOLS = [
  { type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: WEATHER },
  { type: 'function', name: 'get_time', parameters: { type: 'object', properties: {} } },
] as const;
const validWeather = new Ajv({ strict: false }).compile(WEATHER);

interface Call {
  type: string;
  id: string;
  status: string;
  call_id: string;
  name: string;
  arguments: string;
}
interface Response {
  status: string;
  output: (Call & { content?: { transcript?: string }[] })[];
  usage: { input_token_details: { text_tokens: number } };
}

async function session(toolChoice: unknown) {
  const s = await sdkSession(pipeline());
  const next = (match: (e: Event) => boolean) => s.next(match, s.events.length);
  const updated = next((e) => e.type === 'session.updated' || e.type === 'error');
  s.rt.send({ type: 'session.update', session: { type: 'realtime', tools: TOOLS, tool_choice: toolChoice } as never });
  expect(await updated).toMatchObject({ type: 'session.updated', session: { tool_choice: toolChoice } });
  s.rt.send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
  });
  /** A response; resolves with its response.done and the events it sent. */
  const respond = async (response: Record<string, unknown>) => {
    const from = s.events.length;
    const done = next((e) => e.type === 'response.done');
    s.rt.send({ type: 'response.create', response: { max_output_tokens: 400, ...response } as never });
    const r = (await done).response as Response;
    return { response: r, events: s.events.slice(from) };
  };
  return { ...s, next, respond };
}

describe('Realtime function tools', () => {
  it('a forced call: streamed arguments valid for its schema, no audio, the response done with it', async () => {
    const s = await session({ type: 'function', name: 'get_weather' });
    const { response, events } = await s.respond({});
    expect(response.status).toBe('completed');
    expect(response.output).toHaveLength(1);
    const call = response.output[0];
    expect(call).toMatchObject({ type: 'function_call', status: 'completed', name: 'get_weather' });
    expect(validWeather(JSON.parse(call.arguments))).toBe(true);
    const types = events.map((e) => e.type);
    expect(types).not.toContain('response.output_audio.delta'); // a call is never spoken
    const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((e) => e.delta).join('')).toBe(call.arguments);
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({
      item_id: call.id,
      call_id: call.call_id,
      name: 'get_weather',
      arguments: call.arguments,
    });
    // In order: the item, its arguments, its done, the response's done.
    const at = (type: string) => types.indexOf(type);
    expect(at('response.output_item.added')).toBeLessThan(at('response.function_call_arguments.delta'));
    expect(at('response.function_call_arguments.done')).toBeLessThan(at('response.output_item.done'));
    expect(at('response.output_item.done')).toBeLessThan(at('response.done'));
    const joined = events.find((e) => e.type === 'conversation.item.done' && (e.item as Call).type === 'function_call');
    expect(joined).toMatchObject({ item: { id: call.id, status: 'completed' } });
    s.rt.close();
  }, 90_000);

  it("the client's function_call_output is in the next answer's prompt, which is spoken", async () => {
    const [a, b] = await Promise.all([session('required'), session('required')]);
    const first = await a.respond({});
    const same = await b.respond({});
    const callOf = (r: Response) => r.output.find((o) => o.type === 'function_call')!;
    expect(first.response.output.map((o) => o.type)).toEqual(['function_call']);
    // A result must answer a call of the conversation.
    const refused = a.next((e) => e.type === 'error');
    a.rt.send({
      type: 'conversation.item.create',
      item: { type: 'function_call_output', call_id: 'nope', output: '' },
    });
    expect((await refused).error).toMatchObject({ param: 'item.call_id' });
    // Calls in parallel: refused by name (a response ends at its first call), the session unchanged.
    const parallel = a.next((e) => e.type === 'error');
    a.rt.send({ type: 'session.update', session: { type: 'realtime', parallel_tool_calls: true } as never });
    expect((await parallel).error).toMatchObject({ param: 'session.parallel_tool_calls' });

    const results = ['{"temp_c": 21}', '{"temp_c": 21, "sky": "clear, light wind from the west"}'];
    // One after the other: each answer is admitted alone (two at once can exceed the first-packet bound).
    const answers = [];
    for (const [i, s] of [a, b].entries()) {
      const added = s.next((e) => e.type === 'conversation.item.added');
      const call = callOf(i === 0 ? first.response : same.response);
      s.rt.send({
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: call.call_id, output: results[i] },
      });
      expect((await added).item).toMatchObject({ type: 'function_call_output', call_id: call.call_id });
      answers.push(await s.respond({ tool_choice: 'none', max_output_tokens: 6 }));
    }
    for (const { response, events } of answers) {
      expect(response.output.map((o) => o.type)).toEqual(['message']);
      expect(events.some((e) => e.type === 'response.output_audio.delta')).toBe(true);
    }
    // Same conversation but for the result: the longer result is read into the prompt.
    const tokens = answers.map((r) => r.response.usage.input_token_details.text_tokens);
    expect(tokens[1]).toBeGreaterThan(tokens[0]);
    a.rt.close();
    b.rt.close();
  }, 120_000);

  it('cancelled during its arguments: the call is incomplete and leaves the conversation', async () => {
    const s = await session('required');
    const cancelled = s.next((e) => e.type === 'response.done');
    const from = s.events.length;
    s.rt.send({ type: 'response.create', response: { max_output_tokens: 400 } });
    await s.next((e) => e.type === 'response.function_call_arguments.delta');
    s.rt.send({ type: 'response.cancel' });
    const response = (await cancelled).response as Response;
    expect(response.status).toBe('cancelled');
    expect(response.output).toMatchObject([{ type: 'function_call', status: 'incomplete' }]);
    const events = s.events.slice(from);
    expect(events.map((e) => e.type)).not.toContain('response.function_call_arguments.done');
    expect(events.find((e) => e.type === 'conversation.item.deleted')).toMatchObject({
      item_id: response.output[0].id,
    });
    // The conversation is consistent: the call is gone, and the next response is answered over the rest.
    const missing = s.next((e) => e.type === 'error');
    s.rt.send({ type: 'conversation.item.retrieve', item_id: response.output[0].id });
    expect((await missing).error).toMatchObject({ code: 'CHORUS_ERR_NOT_FOUND' });
    const { response: again } = await s.respond({});
    expect(again.status).toBe('completed');
    expect(validWeather(JSON.parse(again.output[0].arguments)) || again.output[0].name === 'get_time').toBe(true);
    s.rt.close();
  }, 90_000);
});
