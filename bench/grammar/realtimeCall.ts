/**
 * `node --import tsx bench/grammar/realtimeCall.ts [--config configs/tiny-omni-text-in.yaml] [--rounds N]` — the
 * Realtime tool-call goal (issue 45): a forced call's `response.function_call_arguments.done`, timed from its
 * `response.create`, against the time to the same number of text tokens unconstrained (a text answer of exactly that
 * many tokens, ignore_eos, tool_choice auto: no grammar), each in a fresh session with the same prompt and tools.
 * Rounds alternate A B B A so drift falls on both; a warm-up pair first (the schema's first compile is not the goal's).
 * Prints both medians, their ratio, the tokens, machine, load and git SHA.
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { buildServer, loadConfig, Orchestrator } from '../../src/index.ts';
import { gitSha, median } from '../common.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'configs/tiny-omni-text-in.yaml' },
    rounds: { type: 'string', default: '6' },
  },
});

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
const TOOLS = [{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: WEATHER }];

type Event = { type: string } & Record<string, unknown>;

/** A fresh session with the tools and one user message; resolves the events of one response.create. */
async function respond(url: string, toolChoice: unknown, response: Record<string, unknown>, until: string) {
  const ws = new WebSocket(url);
  const events: Event[] = [];
  const waiters: Array<{ type: string; resolve: (e: Event) => void }> = [];
  ws.on('message', (data) => {
    const e = JSON.parse(String(data)) as Event;
    if (e.type === 'error') throw new Error(JSON.stringify(e.error));
    events.push(e);
    for (const w of waiters.filter((w) => w.type === e.type)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(e);
    }
  });
  const next = (type: string) =>
    new Promise<Event>((resolve) => {
      const seen = events.find((e) => e.type === type);
      if (seen) events.splice(events.indexOf(seen), 1);
      if (seen) resolve(seen);
      else waiters.push({ type, resolve });
    });
  const send = (e: object) => ws.send(JSON.stringify(e));
  await next('session.created');
  send({ type: 'session.update', session: { output_modalities: ['text'], tools: TOOLS, tool_choice: toolChoice } });
  await next('session.updated');
  send({
    type: 'conversation.item.create',
    item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Weather in Paris?' }] },
  });
  await next('conversation.item.done');
  const startedAt = performance.now();
  send({ type: 'response.create', response });
  await next(until);
  const ms = performance.now() - startedAt;
  const done = (await next('response.done')) as { response?: { usage?: { output_tokens: number } } };
  ws.close();
  return { ms, tokens: done.response?.usage?.output_tokens ?? 0 };
}

const engine = await Orchestrator.start(await loadConfig(values.config!));
const app = buildServer(engine, { apiKey: null });
const url = `${(await app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws')}/v1/realtime`;
try {
  const forced = { type: 'function', name: 'get_weather' };
  const call = () => respond(url, forced, { max_output_tokens: 400 }, 'response.function_call_arguments.done');
  const text = (tokens: number) =>
    // tool_choice auto: the same tools in the prompt (none leaves them out), no grammar; random weights write text.
    respond(url, 'auto', { max_output_tokens: tokens, ignore_eos: true }, 'response.output_text.done');
  const warm = await call();
  await text(warm.tokens);
  const calls: number[] = [];
  const texts: number[] = [];
  const tokens: number[] = [];
  for (let r = 0; r < Number(values.rounds); r++) {
    // A B B A: the call and a text answer of its length, in alternating order (at temperature 0 the call is the same
    // every time, so an odd round's text answer can go first with the previous call's length).
    const last = tokens.at(-1) ?? warm.tokens;
    const t = r % 2 === 1 ? await text(last) : null;
    const c = await call();
    tokens.push(c.tokens);
    texts.push((t ?? (await text(c.tokens))).ms);
    calls.push(c.ms);
  }
  const [a, b] = [median(calls), median(texts)];
  console.log(
    `git ${gitSha()} | ${cpus().length} cpus | load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(`call tokens: ${tokens.join(' ')}`);
  console.log(`forced call to function_call_arguments.done: median ${a.toFixed(0)} ms (${calls.map(Math.round)})`);
  console.log(`same tokens unconstrained, to output_text.done: median ${b.toFixed(0)} ms (${texts.map(Math.round)})`);
  console.log(`ratio call / text: ${(a / b).toFixed(3)}x (goal <= 1.2x)`);
} finally {
  await app.close();
  await engine.close();
}
