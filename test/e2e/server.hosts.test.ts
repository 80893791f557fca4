/**
 * DNS rebinding: a request whose Host is not a name the server answers to is refused (421, CHORUS_ERR_FORBIDDEN_HOST)
 * on every route and on the WebSocket upgrade; the loopback names, the configured host and --allowed-hosts pass; an
 * Origin is checked against the server's own origins and the configured ones, never against the Host. A server bound
 * beyond loopback without an API key says so in its log.
 */
import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../src/server/app.ts';
import { startTestServer } from './serverClient.ts';
import { TestEngine } from './serverTestEngine.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let port: number;

beforeAll(async () => {
  // Bound to 127.0.0.1 but configured as chorus.test (the name a LAN or proxy setup would give it).
  server = await startTestServer({ host: 'chorus.test', allowedHosts: ['api.example.com'], reload: reloadNothing });
  port = Number(new URL(server.base).port);
});

afterAll(async () => {
  await server.app.close();
});

async function reloadNothing() {
  return { changedStages: [], startMs: 0 };
}

/** One HTTP request with the given Host (fetch may not set Host): status and parsed body. */
function send(method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** An upgrade to /v1/realtime with these headers: 101, or the status and body of the refusal. */
function upgrade(headers: Record<string, string>) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const ws = new WebSocket(server.wsUrl, { headers });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => {
      resolve({ status: 101, body: '' });
      ws.close();
    });
    ws.on('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

const chat = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] });
const routes: [string, string, string?][] = [
  ['GET', '/'],
  ['GET', '/health'],
  ['GET', '/v1/models'],
  ['GET', '/v1/stages'],
  ['GET', '/metrics'],
  ['GET', '/no-such-route'],
  ['POST', '/v1/chat/completions', chat],
  ['POST', '/admin/reload'],
  ['OPTIONS', '/v1/chat/completions'],
];

describe('Host allow-list', () => {
  it('refuses a foreign Host on every route with 421 and says how to allow it', async () => {
    for (const host of ['evil.example', `evil.example:${port}`, `127.0.0.1.evil.example:${port}`]) {
      for (const [method, path, body] of routes) {
        const res = await send(method, path, { host, 'content-type': 'application/json' }, body);
        expect(res.status, `${method} ${path} Host ${host}`).toBe(421);
        const error = JSON.parse(res.body).error;
        expect(error.code).toBe('CHORUS_ERR_FORBIDDEN_HOST');
        expect(error.message).toContain('DNS rebinding');
        expect(error.message).toContain(`--allowed-hosts ${host.split(':')[0]}`);
      }
    }
    expect(server.engine.handles).toEqual([]); // the chat request never reached the engine
  });

  it('refuses the WebSocket upgrade from a foreign Host', async () => {
    const refused = await upgrade({ host: `evil.example:${port}` });
    expect(refused.status).toBe(421);
    expect(JSON.parse(refused.body).error.code).toBe('CHORUS_ERR_FORBIDDEN_HOST');
  });

  it('serves the loopback names, the configured host and --allowed-hosts', async () => {
    const hosts = [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      'localhost',
      `chorus.test:${port}`,
      `API.example.com:${port}`,
    ];
    for (const host of hosts) {
      expect((await send('GET', '/v1/models', { host })).status, host).toBe(200);
      const completion = await send('POST', '/v1/chat/completions', { host, 'content-type': 'application/json' }, chat);
      expect(completion.status, host).toBe(200);
      expect((await upgrade({ host })).status, host).toBe(101);
    }
  });
});

describe('origins', () => {
  it("allows the server's own origins, not a foreign page that reached it under an allowed Host", async () => {
    const host = `127.0.0.1:${port}`;
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://chorus.test:${port}`])
      expect((await send('GET', '/v1/models', { host, origin })).status, origin).toBe(200);
    // The old rule (Origin matches Host) let a rebound page in; the Host check stops that page, and an Origin is
    // never trusted for matching the Host it came with.
    const rebound = await send('GET', '/v1/models', {
      host: `evil.example:${port}`,
      origin: `http://evil.example:${port}`,
    });
    expect(rebound.status).toBe(421);
    const foreign = await send('GET', '/v1/models', { host, origin: `http://evil.example:${port}` });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error.code).toBe('CHORUS_ERR_FORBIDDEN_ORIGIN');
    expect((await upgrade({ host, origin: `http://evil.example:${port}` })).status).toBe(403);
    expect((await upgrade({ host, origin: `http://localhost:${port}` })).status).toBe(101);
  });
});

describe('exposure without an API key', () => {
  /** The warnings buildServer logs for these options. */
  async function warningsFor(host: string, apiKey: string | null): Promise<string[]> {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const app = buildServer(new TestEngine(), { host, apiKey, logger: pino({ level: 'warn' }, sink) });
    await app.close();
    return lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level === 40)
      .map((l) => l.msg);
  }

  it('warns loudly when bound beyond loopback with no key, and only then', async () => {
    const warned = await warningsFor('0.0.0.0', null);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/^SERVING 0\.0\.0\.0 WITHOUT AN API KEY: .*--api-key KEY/);
    expect(await warningsFor('10.1.2.3', null)).toHaveLength(1);
    expect(await warningsFor('0.0.0.0', 'k')).toEqual([]);
    expect(await warningsFor('127.0.0.1', null)).toEqual([]);
  });
});
