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
import { buildServer, Orchestrator, parseConfig } from '../src/index.ts';
import { scriptFlags } from './scriptFlags.ts';
import { streamedTtft } from './streamChat.ts';

const values = scriptFlags({ partition: 'api_key', rounds: 3, config: 'configs/tiny-omni-text-in.yaml' });
const text = `security: {cache_partition: ${values.partition}}\n${readFileSync(values.config, 'utf8')}`;
const engine = await Orchestrator.start(parseConfig(text, values.config));
const app = buildServer(engine, { apiKey: ['key-a', 'key-b'], modelName: 'probe' });
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

/** A 2-token answer to `content` under `key` (and `salt`): its cached and prompt tokens, and its client TTFT. */
async function ask(key: string, content: string, salt?: string) {
  const body = { model: 'probe', messages: [{ role: 'user', content }], max_tokens: 2, cache_salt: salt };
  return streamedTtft(base, body, { authorization: `Bearer ${key}` });
}

const prefix = (topic: string) => `${topic}: ${`A long shared system prompt about ${topic}. `.repeat(70)}`;
const show = (p: Awaited<ReturnType<typeof ask>>) =>
  `${p.cachedTokens}/${p.promptTokens} cached, ${Math.round(p.ttftMs)} ms`;
console.log(`partition ${values.partition}: cached_tokens/prompt_tokens, time to first token`);
for (let round = 0; round < values.rounds; round++) {
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
