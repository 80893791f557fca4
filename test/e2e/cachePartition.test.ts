/**
 * Cache partitions on a real server (docs/security.md#what-is-shared): the same long prefix sent under two
 * `cache_salt`s is cached within a salt only (`cached_tokens` > 0 within, 0 across), as is the same image through the
 * encoder-output store and the encoder's own cache; with two API keys each key is a partition by default, and a
 * Realtime session's `session.cache_salt` holds for its responses. Clients: the official openai SDK (chat, which
 * passes cache_salt through) and a raw WebSocket (Realtime).
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { pngBytes } from '../helpers/media.ts';
import { parsePrometheus, RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const KEYS = ['key-of-tenant-one', 'key-of-tenant-two'];
const BLOCK = 16;

const yaml = `
ec_store:
  url: null
  budget_bytes: 64MiB
  ttl_seconds: 600
stages:
  - stage_id: image-encoder
    kind: encoder
    engine: {threads: 1}
    encoder: {modality: image, cache_bytes: 16MiB}
  - stage_id: thinker
    kind: thinker
    engine: {threads: 1, prefix_cache: {max_bytes: 32MiB, block_positions: ${BLOCK}}}
    inputs: [{from: image-encoder}]
    final_output: true
    final_output_type: text
`;

let served: ServedPipeline | undefined;
let base: string;
const sdk = (key: string) => new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });

beforeAll(async () => {
  served = await servePipeline(parseConfig(yaml, 'cachePartition.yaml'), { apiKey: KEYS, modelName: 'chorus-test' });
  ({ base } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
});

/** A prefix of ~20 blocks: long enough to be many blocks, short enough to prefill in a few ms. */
const prefix = (topic: string) => `${topic}: ${`You answer questions about ${topic}. `.repeat(10)}`;

type Part = OpenAI.Chat.Completions.ChatCompletionContentPart;
/** cached_tokens of a 2-token answer to `content` (a fresh question after the shared prefix each time). */
async function cachedTokens(key: string, content: string | Part[], salt?: string): Promise<number> {
  const c = await sdk(key).chat.completions.create({
    model: 'chorus-test',
    messages: [{ role: 'user', content }],
    max_tokens: 2,
    ...((salt === undefined ? {} : { cache_salt: salt }) as object),
  });
  return c.usage!.prompt_tokens_details!.cached_tokens!;
}

async function scrape(): Promise<(name: string) => number> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${KEYS[0]}` } })).text();
  const families = parsePrometheus(text);
  return (name) => (families.get(name)?.samples ?? []).reduce((sum, s) => sum + s.value, 0);
}

/** Polls /metrics until `name` reaches `value` (encoder counters come with the stage's stats, every 250 ms). */
async function counterReaches(name: string, value: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const now = (await scrape())(name);
    if (now >= value) return expect(now).toBe(value);
    if (Date.now() > deadline) throw new Error(`${name} stayed at ${now}, short of ${value}`);
    await new Promise((resolve) => setTimeout(resolve, 50)); // a scrape interval, not a synchronisation
  }
}

describe('cache partitions', () => {
  it('a prefix is cached within its cache_salt only: 0 across salts and without one, > 0 within', async () => {
    const p = prefix('rivers');
    expect(await cachedTokens(KEYS[0], `${p}Which is longest?`, 'salt-a')).toBe(0);
    const within = await cachedTokens(KEYS[0], `${p}Which is widest?`, 'salt-a');
    expect(within).toBeGreaterThanOrEqual(10 * BLOCK);
    expect(await cachedTokens(KEYS[0], `${p}Which is deepest?`, 'salt-b')).toBe(0);
    expect(await cachedTokens(KEYS[0], `${p}Which is oldest?`)).toBe(0);
    // Each partition caches for itself as before.
    expect(await cachedTokens(KEYS[0], `${p}Which is coldest?`, 'salt-b')).toBe(within);
  });

  it('each API key is its own partition by default, with and without a salt', async () => {
    const refused = await sdk('key-of-nobody')
      .models.list()
      .catch((err: unknown) => err);
    expect(refused).toMatchObject({ status: 401 });
    const p = prefix('mountains');
    expect(await cachedTokens(KEYS[0], `${p}Which is highest?`)).toBe(0);
    expect(await cachedTokens(KEYS[1], `${p}Which is steepest?`)).toBe(0);
    expect(await cachedTokens(KEYS[1], `${p}Which is coldest?`)).toBeGreaterThan(0);
    expect(await cachedTokens(KEYS[0], `${p}Which is oldest?`, 'shared-salt')).toBe(0);
    expect(await cachedTokens(KEYS[1], `${p}Which is oldest?`, 'shared-salt')).toBe(0);
  });

  it('an image is encoded once per salt: the EC store and the encoder cache hit within a salt only', async () => {
    const image = `data:image/png;base64,${Buffer.from(pngBytes(64, 64, 7)).toString('base64')}`;
    const ask = (question: string): Part[] => [
      { type: 'image_url', image_url: { url: image } },
      { type: 'text', text: question },
    ];
    const before = await scrape();
    const [ecHits, ecMisses] = [before('chorus_ec_hits_total'), before('chorus_ec_misses_total')];
    const encoded = before('chorus_encoder_cache_misses_total');
    await cachedTokens(KEYS[0], ask('What is this?'), 'salt-a');
    await counterReaches('chorus_encoder_cache_misses_total', encoded + 1);
    await cachedTokens(KEYS[0], ask('What colour is it?'), 'salt-a'); // the store has it: no encoder
    await cachedTokens(KEYS[0], ask('How big is it?'), 'salt-b'); // another salt: encoded again
    await counterReaches('chorus_encoder_cache_misses_total', encoded + 2);
    const after = await scrape();
    expect(after('chorus_ec_hits_total') - ecHits).toBe(1);
    expect(after('chorus_ec_misses_total') - ecMisses).toBe(2);
    expect(after('chorus_encoder_cache_hits_total') - before('chorus_encoder_cache_hits_total')).toBe(0);
  });

  it("a Realtime session's cache_salt and API key hold for its responses; 42 is refused naming the field", async () => {
    const open = (key: string) =>
      RealtimeClient.connect(`${base.replace('http', 'ws')}/v1/realtime`, undefined, {
        headers: { authorization: `Bearer ${key}` },
      });
    const p = prefix('oceans');
    const respond = async (client: RealtimeClient, question: string) => {
      const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: `${p}${question}` }] }];
      client.send({
        type: 'response.create',
        response: { conversation: 'none', input, output_modalities: ['text'], max_output_tokens: 2 },
      });
      const done = await client.next('response.done');
      const usage = (done.response as { usage: { input_token_details: { cached_tokens: number } } }).usage;
      return usage.input_token_details.cached_tokens;
    };
    const salted = async (salt: string, key = KEYS[0]) => {
      const client = await open(key);
      client.send({ type: 'session.update', session: { cache_salt: salt } });
      await client.next('session.updated');
      return client;
    };
    const [x, y] = [await salted('salt-x'), await salted('salt-y')];
    const [again, otherKey] = [await salted('salt-x'), await salted('salt-x', KEYS[1])];
    try {
      expect(await respond(x, 'Which is deepest?')).toBe(0);
      expect(await respond(x, 'Which is saltiest?')).toBeGreaterThanOrEqual(10 * BLOCK);
      expect(await respond(y, 'Which is widest?')).toBe(0);
      // The partition is the salt and the key, not the session: another session of both shares, another key not.
      expect(await respond(again, 'Which is coldest?')).toBeGreaterThanOrEqual(10 * BLOCK);
      expect(await respond(otherKey, 'Which is calmest?')).toBe(0);
      y.send({ type: 'session.update', event_id: 'bad-salt', session: { cache_salt: 42 } });
      expect((await y.next('error')).error).toMatchObject({ param: 'session.cache_salt', event_id: 'bad-salt' });
      y.send({ type: 'response.cancel', event_id: 'extra', response: {} });
      expect((await y.next('error')).error).toMatchObject({ param: 'response', event_id: 'extra' });
    } finally {
      for (const client of [x, y, again, otherKey]) client.close();
    }
  });
});
