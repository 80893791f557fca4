/**
 * Clients that stop reading, over the scripted engine: a response paused past the client-stall timeout fails with
 * CHORUS_ERR_CLIENT_TOO_SLOW (Realtime: a failed response.done; chat SSE: an error chunk, no [DONE]) and its request
 * is cancelled in the engine at once, before the client reads anything again. A client that reads on is not failed.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealtimeClient, startTestServer } from './serverClient.ts';
import type { ScriptStep, TestHandle } from './serverTestEngine.ts';

const CHUNK_SAMPLES = 4800; // 12.8 kB of base64 each
const MAX_CHUNKS = 1500; // ~19 MB: far more than the kernel buffers hold, so only a pause stops it
const STALL_MS = 300;

let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer(
    { maxStreamBufferBytes: 256 * 1024, socketHighWaterBytes: 32 * 1024, clientStallTimeoutMs: STALL_MS },
    {
      script: () => {
        const steps: ScriptStep[] = [];
        for (let i = 0; i < MAX_CHUNKS; i++)
          steps.push({ kind: 'audio', samples: CHUNK_SAMPLES }, { kind: 'text', delta: `t${i} ` });
        return steps;
      },
    },
  );
});
afterAll(async () => {
  await server.app.close();
});

async function nextHandle(before: number): Promise<TestHandle> {
  for (;;) {
    const h = server.engine.handles[before];
    if (h) return h;
    await new Promise((r) => setImmediate(r));
  }
}

function postChat(): Promise<IncomingMessage> {
  const body = JSON.stringify({
    model: 'chorus-test-omni',
    messages: [{ role: 'user', content: 'x' }],
    modalities: ['text', 'audio'],
    audio: { voice: 'alloy', format: 'pcm16' },
    stream: true,
  });
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      new URL('/v1/chat/completions', server.base),
      { method: 'POST', headers: { 'content-type': 'application/json' } },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('a client that stops reading', () => {
  it('realtime: the response fails with CHORUS_ERR_CLIENT_TOO_SLOW; the session goes on', async () => {
    const client = await RealtimeClient.connect(server.wsUrl);
    const before = server.engine.handles.length;
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
    });
    client.send({ type: 'response.create' });
    client.ws.pause(); // reads nothing more: the kernel buffers fill, then the server's, then the request pauses
    const handle = await nextHandle(before);
    await handle.whenPaused();
    // Cancelled in the engine while the client still reads nothing.
    expect(await handle.finished).toBe('cancelled');
    expect(handle.resumeCalls).toBe(0);

    client.ws.resume();
    const done = await client.next('response.done', () => true, 60_000);
    const response = done.response as {
      status: string;
      status_details: { type: string; error: { type: string; code: string; message: string } };
    };
    expect(response.status).toBe('failed');
    expect(response.status_details.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'CHORUS_ERR_CLIENT_TOO_SLOW',
    });
    expect(response.status_details.error.message).toMatch(/read too slowly.*stayed full for 0.3 s/);
    // The session is still usable (here the next answer would flood again; a cancel shows it is answered).
    client.send({ type: 'response.create' });
    await client.next('response.created');
    client.send({ type: 'response.cancel' });
    const next = await client.next('response.done', () => true, 60_000);
    expect((next.response as { status: string }).status).toBe('cancelled');
    client.close();
  });

  it('chat SSE: an error chunk ends the stream, without [DONE]', async () => {
    const before = server.engine.handles.length;
    const res = await postChat();
    expect(res.statusCode).toBe(200);
    res.pause();
    const handle = await nextHandle(before);
    await handle.whenPaused();
    expect(await handle.finished).toBe('cancelled');
    expect(handle.resumeCalls).toBe(0);

    let text = '';
    res.setEncoding('utf8');
    res.on('data', (d: string) => (text += d));
    res.resume();
    await new Promise((resolve) => res.on('end', resolve));
    const events = text
      .split('\n\n')
      .filter((l) => l.startsWith('data: '))
      .map((l) => l.slice(6));
    expect(events).not.toContain('[DONE]');
    expect(JSON.parse(events.at(-1)!)).toMatchObject({
      error: { type: 'invalid_request_error', code: 'CHORUS_ERR_CLIENT_TOO_SLOW' },
    });
  });
});
