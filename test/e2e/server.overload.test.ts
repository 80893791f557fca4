/**
 * Overload: a bounded admission queue. At 3x the capacity (running + queued) of concurrent chats every request is
 * served or refused with 429 rate_limit_exceeded + Retry-After, never a 5xx; the openai SDK's own retry then gets
 * every one of them served. Realtime answers a response.create over capacity with an error event and the session
 * stays open. chorus_queue_depth / chorus_queue_wait_seconds are exported.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultScript } from './serverTestEngine.ts';
import { RealtimeClient, startTestServer } from './serverClient.ts';

const LIMITS = { maxRunningRequests: 2, maxQueuedRequests: 2, maxQueueWaitMs: 2_000 };
let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer(LIMITS);
});
afterAll(async () => {
  await server?.app.close();
});

const chat = () =>
  fetch(`${server.base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
  });

describe('admission under load', () => {
  it('3x capacity: each chat is served or gets 429 + Retry-After, never a 5xx', async () => {
    server.engine.script = defaultScript({ tokens: 4, stepMs: 60 }); // ~250 ms a request
    const capacity = LIMITS.maxRunningRequests + LIMITS.maxQueuedRequests;
    const replies = await Promise.all(Array.from({ length: 3 * capacity }, chat));
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([]);
    const refused = replies.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(capacity); // the queue served a burst
    for (const r of refused) {
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      const body = (await r.json()) as { error: { type: string; code: string } };
      expect(body.error).toMatchObject({ type: 'rate_limit_exceeded', code: 'CHORUS_ERR_RATE_LIMITED' });
    }
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    expect(metrics).toMatch(/^chorus_queue_depth 0$/m);
    expect(metrics).toMatch(/^chorus_queue_wait_seconds_count \d+$/m);
  });

  it('the openai SDK retries its 429s until every request is served', async () => {
    server.engine.script = defaultScript({ tokens: 4, stepMs: 60 });
    const sdk = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'none', maxRetries: 6 });
    const capacity = LIMITS.maxRunningRequests + LIMITS.maxQueuedRequests;
    const answers = await Promise.all(
      Array.from({ length: 3 * capacity }, () =>
        sdk.chat.completions.create({ model: 'chorus-test-omni', messages: [{ role: 'user', content: 'hi' }] }),
      ),
    );
    expect(answers.map((a) => a.choices[0].message.content)).toEqual(answers.map(() => 'w0 w1 w2 w3 '));
  }, 60_000);

  it('Realtime: a response.create over capacity is an error event; the session stays open, answers later', async () => {
    server.engine.script = defaultScript({ tokens: 40, stepMs: 20 });
    const busy = await Promise.all([0, 1].map(() => RealtimeClient.connect(server.wsUrl)));
    for (const c of busy) {
      c.send({ type: 'response.create', response: { input: [userItem('long')], output_modalities: ['text'] } });
      await c.next('response.created');
    }
    const client = await RealtimeClient.connect(server.wsUrl);
    client.send({ type: 'response.create', event_id: 'e1', response: { input: [userItem('hi')] } });
    const err = await client.next('error');
    expect(err.error).toMatchObject({ type: 'rate_limit_exceeded', code: 'CHORUS_ERR_RATE_LIMITED', event_id: 'e1' });
    for (const c of busy) await c.next('response.done');
    server.engine.script = defaultScript({ tokens: 2 });
    client.send({ type: 'response.create', response: { input: [userItem('hi')], output_modalities: ['text'] } });
    expect(((await client.next('response.done')).response as { status: string }).status).toBe('completed');
    for (const c of [...busy, client]) c.close();
  });
});

function userItem(text: string) {
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}
