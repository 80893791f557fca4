/**
 * Bearer token on HTTP and on the WebSocket upgrade (header or the browser subprotocol), the Origin
 * allow-list, CORS preflight, and the session cap.
 */
import OpenAI from 'openai';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealtimeClient, startTestServer } from './serverClient.ts';
import { defaultScript } from './serverTestEngine.ts';

const KEY = 'sk-chorus-test-1234';

/** Attempts an upgrade; resolves with the HTTP status of a refusal, or 101 and the chosen subprotocol. */
function tryUpgrade(url: string, protocols: string[] = [], headers: Record<string, string> = {}) {
  return new Promise<{ status: number; protocol: string; body: string }>((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, protocol: '', body }));
    });
    ws.on('open', () => {
      resolve({ status: 101, protocol: ws.protocol, body: '' });
      ws.close();
    });
    ws.on('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

describe('api key', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({ apiKey: KEY }, { script: defaultScript({ tokens: 2 }) });
  });
  afterAll(async () => {
    await server.app.close();
  });

  it('guards HTTP routes, but not the playground page or /health', async () => {
    const none = await fetch(`${server.base}/v1/models`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await none.json()) as { error: { code: string; type: string } }).error).toMatchObject({
      code: 'CHORUS_ERR_UNAUTHORIZED',
      type: 'authentication_error',
    });
    expect((await fetch(`${server.base}/v1/models`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${server.base}/metrics`)).status).toBe(401);
    expect((await fetch(`${server.base}/v1/stages`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
    expect((await fetch(`${server.base}/`)).status).toBe(200);

    const sdk = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: KEY, maxRetries: 0 });
    const completion = await sdk.chat.completions.create({
      model: 'chorus-test-omni',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(completion.choices[0].message.content).toBe('w0 w1 ');
    const wrong = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'nope', maxRetries: 0 });
    await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it('guards the WebSocket upgrade; accepts the header or the openai-insecure-api-key subprotocol', async () => {
    const refused = await tryUpgrade(server.wsUrl);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body).error.code).toBe('CHORUS_ERR_UNAUTHORIZED');
    expect((await tryUpgrade(server.wsUrl, ['realtime', 'openai-insecure-api-key.wrong'])).status).toBe(401);

    expect((await tryUpgrade(server.wsUrl, [], { authorization: `Bearer ${KEY}` })).status).toBe(101);
    const browserStyle = await tryUpgrade(server.wsUrl, ['realtime', `openai-insecure-api-key.${KEY}`]);
    expect(browserStyle).toMatchObject({ status: 101, protocol: 'realtime' }); // the key is never echoed back

    const client = await RealtimeClient.connect(server.wsUrl, ['realtime', `openai-insecure-api-key.${KEY}`]);
    expect(((await client.respond('x')).response as { status: string }).status).toBe('completed');
    client.close();
  });
});

describe('origin allow-list', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({ allowedOrigins: ['https://app.example'] });
  });
  afterAll(async () => {
    await server.app.close();
  });

  it('refuses WebSocket upgrades from foreign origins, allows same-origin and listed ones', async () => {
    const evil = await tryUpgrade(server.wsUrl, [], { origin: 'https://evil.example' });
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body).error.code).toBe('CHORUS_ERR_FORBIDDEN_ORIGIN');
    expect((await tryUpgrade(server.wsUrl, [], { origin: 'null' })).status).toBe(403);
    expect((await tryUpgrade(server.wsUrl, [], { origin: server.base })).status).toBe(101);
    expect((await tryUpgrade(server.wsUrl, [], { origin: 'https://app.example' })).status).toBe(101);
    expect((await tryUpgrade(server.wsUrl)).status).toBe(101); // not a browser
  });

  it('refuses HTTP from foreign origins and answers CORS preflight for listed ones', async () => {
    const evil = await fetch(`${server.base}/v1/models`, { headers: { origin: 'https://evil.example' } });
    expect(evil.status).toBe(403);
    const listed = await fetch(`${server.base}/v1/models`, { headers: { origin: 'https://app.example' } });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('access-control-allow-origin')).toBe('https://app.example');
    const preflight = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://app.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('authorization');
  });
});

describe('session cap', () => {
  let server: Awaited<ReturnType<typeof startTestServer>>;
  beforeAll(async () => {
    server = await startTestServer({ maxSessions: 2 }, { script: defaultScript({ tokens: 2 }) });
  });
  afterAll(async () => {
    await server.app.close();
  });

  it('refuses sessions over the cap with 429 + Retry-After and takes them again once one closes', async () => {
    const a = await RealtimeClient.connect(server.wsUrl);
    const b = await RealtimeClient.connect(server.wsUrl);
    const third = await tryUpgrade(server.wsUrl);
    expect(third.status).toBe(429);
    expect(JSON.parse(third.body).error).toMatchObject({
      type: 'rate_limit_exceeded',
      code: 'CHORUS_ERR_RATE_LIMITED',
    });
    const http = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(http.status).toBe(429);
    expect(Number(http.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    a.close();
    await a.closed;
    // The server sees the close a moment after the client does; retry until the slot is free.
    let status = 0;
    for (let i = 0; i < 100 && status !== 101; i++) status = (await tryUpgrade(server.wsUrl)).status;
    expect(status).toBe(101);
    b.close();
  });
});
