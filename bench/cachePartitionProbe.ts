/**
 * What a client learns of another client's prompt through the prefix cache (issue 41, docs/security.md#what-is-shared):
 * tenant A (one API key) sends a long prefix; tenant B (another key) sends the same prefix, then a fresh one of the
 * same length; A sends its prefix again, and once more under another cache_salt. Each streams a 2-token answer and
 * reports `cached_tokens` and its time to first token. With `--partition shared` (every key in one partition, as
 * before issue 41) B's copy of A's prefix is a hit; with the default (`api_key`) it is not.
 *
 *   npx tsx bench/cachePartitionProbe.ts [--partition api_key|shared] [--rounds 3] [--config FILE]
 *
 * (FILE: configs/tiny-omni-text-in.yaml by default; the probe adds its security: line.)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildServer, Orchestrator, parseConfig } from '../src/index.ts';

const { values } = parseArgs({
  options: {
    partition: { type: 'string', default: 'api_key' },
    rounds: { type: 'string', default: '3' },
    config: { type: 'string', default: 'configs/tiny-omni-text-in.yaml' },
  },
});
const text = `security: {cache_partition: ${values.partition}}\n${readFileSync(values.config, 'utf8')}`;
const engine = await Orchestrator.start(parseConfig(text, values.config));
const app = buildServer(engine, { apiKey: ['key-a', 'key-b'], modelName: 'probe' });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

interface Probe {
  readonly ttftMs: number;
  readonly cached: number;
  readonly prompt: number;
}

async function ask(key: string, content: string, salt?: string): Promise<Probe> {
  const started = performance.now();
  const response = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'probe',
      messages: [{ role: 'user', content }],
      max_tokens: 2,
      stream: true,
      stream_options: { include_usage: true },
      ...(salt === undefined ? {} : { cache_salt: salt }),
    }),
  });
  let ttftMs = 0;
  let usage = { cached: -1, prompt: 0 };
  let pending = '';
  for await (const bytes of response.body!) {
    pending += Buffer.from(bytes).toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      if (!line.startsWith('data: {')) continue;
      const event = JSON.parse(line.slice('data: '.length));
      if (ttftMs === 0 && event.choices?.[0]?.delta?.content) ttftMs = Math.round(performance.now() - started);
      if (event.usage)
        usage = { cached: event.usage.prompt_tokens_details.cached_tokens, prompt: event.usage.prompt_tokens };
    }
  }
  return { ttftMs, ...usage };
}

const prefix = (topic: string) => `${topic}: ${`A long shared system prompt about ${topic}. `.repeat(70)}`;
const show = (p: Probe) => `${p.cached}/${p.prompt} cached, ${p.ttftMs} ms`;
console.log(`partition ${values.partition}: cached_tokens/prompt_tokens, time to first token`);
for (let round = 0; round < Number(values.rounds); round++) {
  const own = prefix(`topic${round}`);
  const probes = {
    'A sends P': await ask('key-a', `${own} Q1`),
    'B sends P': await ask('key-b', `${own} Q2`),
    'B sends fresh': await ask('key-b', `${prefix(`fresh${round}`)} Q3`),
    'A sends P again': await ask('key-a', `${own} Q4`),
    'A, P, other salt': await ask('key-a', `${own} Q5`, 'other-salt'),
  };
  console.log(
    Object.entries(probes)
      .map(([what, p]) => `${what}: ${show(p)}`)
      .join(' | '),
  );
}
await app.close();
await engine.close();
