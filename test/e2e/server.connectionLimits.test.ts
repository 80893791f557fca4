/**
 * How long a client may hold the server: a request whose headers or body stall is cut (408, socket closed); a
 * Realtime session idle past the idle timeout is closed (error event, then 1000), but never while it is being answered;
 * drain refuses new sessions (503, Retry-After) and closing the server closes the open ones with 1001.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { drainServer } from '../../src/server/app.ts';
import { RealtimeClient, startTestServer } from './serverClient.ts';
import { defaultScript } from './serverTestEngine.ts';

let servers: Awaited<ReturnType<typeof startTestServer>>[] = [];

async function start(...args: Parameters<typeof startTestServer>) {
  const server = await startTestServer(...args);
  servers.push(server);
  return server;
}

afterEach(async () => {
  for (const s of servers) await s.app.close();
  servers = [];
});

/** A raw connection that sends `head` and then nothing: what the server wrote before it closed, and when. */
function stall(base: string, head: string): Promise<{ reply: string; afterMs: number }> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const startedAt = performance.now();
    const socket: Socket = connect(Number(port), '127.0.0.1', () => socket.write(head));
    let reply = '';
    socket.on('data', (d: Buffer) => (reply += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => resolve({ reply, afterMs: performance.now() - startedAt }));
  });
}

describe('request timeouts', () => {
  it('cuts a body that stops arriving (408) instead of holding the socket for minutes', async () => {
    const server = await start({ requestTimeoutMs: 600, headersTimeoutMs: 300 });
    const partial =
      'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1000\r\n\r\n{"messages":';
    const cut = await stall(server.base, partial);
    expect(cut.reply).toMatch(/^HTTP\/1\.1 408/);
    expect(cut.afterMs).toBeGreaterThanOrEqual(550);
    expect(cut.afterMs).toBeLessThan(5000);
    expect(server.engine.handles).toEqual([]);
  });

  it('cuts headers that stop arriving (slowloris)', async () => {
    const server = await start({ requestTimeoutMs: 5000, headersTimeoutMs: 300 });
    const cut = await stall(server.base, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    expect(cut.reply).toMatch(/^HTTP\/1\.1 408/);
    expect(cut.afterMs).toBeLessThan(4000); // well before the request timeout
  });
});

describe('Realtime idle timeout', () => {
  it('closes a session that sends nothing, saying why; a session being answered is not idle', async () => {
    // Each answer takes ~8 x 100 ms, longer than the 300 ms idle timeout.
    const server = await start({ wsIdleTimeoutMs: 300 }, { script: defaultScript({ tokens: 8, stepMs: 100 }) });
    const client = await RealtimeClient.connect(server.wsUrl);
    const done = await client.respond('a long answer please');
    expect((done.response as { status: string }).status).toBe('completed');
    const startedIdleAt = performance.now();
    const idle = await client.next('error', () => true, 5000);
    expect(idle.error).toMatchObject({ code: 'CHORUS_ERR_SESSION_IDLE', type: 'invalid_request_error' });
    expect((idle.error as { message: string }).message).toContain('--ws-idle-timeout');
    expect(await client.closed).toEqual({ code: 1000, reason: 'idle timeout' });
    expect(performance.now() - startedIdleAt).toBeGreaterThanOrEqual(250);
  });

  it('keeps a session that keeps talking', async () => {
    const server = await start({ wsIdleTimeoutMs: 300 });
    const client = await RealtimeClient.connect(server.wsUrl);
    // Ten exchanges of ~50 ms each, each a client event, span more than the idle timeout.
    for (let i = 0; i < 10; i++) {
      client.send({ type: 'session.update', session: { instructions: `turn ${i}` } });
      await client.next('session.updated');
      await new Promise<void>((resolve) => setTimeout(resolve, 50)); // pacing the client, not synchronisation
    }
    expect(client.ws.readyState).toBe(client.ws.OPEN);
    client.close();
  });
});

describe('drain', () => {
  it('refuses new sessions with 503 and closes open ones with 1001 when the server closes', async () => {
    const server = await start();
    const open = await RealtimeClient.connect(server.wsUrl);
    expect(await drainServer(server.app, 1000, 'SIGTERM: draining')).toBe(true);

    const refused = await new Promise<{ status: number; retryAfter: string | undefined; body: string }>((resolve) => {
      const ws = new (open.ws.constructor as typeof import('ws').WebSocket)(server.wsUrl);
      ws.on('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
      });
      ws.on('error', () => {});
    });
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(refused.body).error.code).toBe('CHORUS_ERR_SHUTTING_DOWN');

    const closed = open.closed;
    await server.app.close();
    servers = [];
    expect(await closed).toEqual({ code: 1001, reason: 'server shutting down' });
  });
});
