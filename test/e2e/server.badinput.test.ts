/**
 * Bad clients: every malformed frame or body gets an error with a stable code, the connection (where it can)
 * and the server survive, and nothing is left behind.
 */
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RealtimeClient, startTestServer } from './serverClient.ts';
import { defaultScript } from './serverTestEngine.ts';

const MAX_FRAME = 64 * 1024;
let server: Awaited<ReturnType<typeof startTestServer>>;

beforeAll(async () => {
  server = await startTestServer(
    { maxFrameBytes: MAX_FRAME, maxBodyBytes: 32 * 1024 },
    { script: defaultScript({ tokens: 3 }) },
  );
});
afterAll(async () => {
  await server.app.close();
});

async function activeSessions(): Promise<number> {
  const text = await (await fetch(`${server.base}/metrics`)).text();
  const lines = text.split('\n').filter((l) => l.startsWith('chorus_active_sessions{'));
  return lines.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

describe('bad realtime frames', () => {
  it('answers each with an error event and keeps the session usable', async () => {
    const client = await RealtimeClient.connect(server.wsUrl);
    const cases: [string | Buffer, string, string | null][] = [
      ['{not json', 'CHORUS_ERR_REQUEST_INVALID', null],
      ['[1,2,3]', 'CHORUS_ERR_REQUEST_INVALID', null],
      ['"just a string"', 'CHORUS_ERR_REQUEST_INVALID', null],
      ['{"event_id":"e1"}', 'CHORUS_ERR_REQUEST_INVALID', 'e1'],
      ['{"type":"nope.nothing","event_id":"e2"}', 'CHORUS_ERR_EVENT_UNKNOWN', 'e2'],
      ['{"type":"conversation.item.create","event_id":"e3"}', 'CHORUS_ERR_REQUEST_INVALID', 'e3'],
      [
        '{"type":"conversation.item.create","event_id":"e4","item":{"type":"message","role":"robot","content":[]}}',
        'CHORUS_ERR_REQUEST_INVALID',
        'e4',
      ],
      [
        '{"type":"session.update","event_id":"e5","session":{"output_modalities":["smell"]}}',
        'CHORUS_ERR_REQUEST_INVALID',
        'e5',
      ],
      [
        '{"type":"session.update","event_id":"e6","session":{"audio":{"output":{"format":{"type":"audio/pcmu"}}}}}',
        'CHORUS_ERR_REQUEST_INVALID',
        'e6',
      ],
      [
        '{"type":"session.update","event_id":"e7","session":{"max_output_tokens":1000000}}',
        'CHORUS_ERR_REQUEST_INVALID',
        'e7',
      ],
      ['{"type":"input_audio_buffer.append","event_id":"e8","audio":"@@@@"}', 'CHORUS_ERR_MEDIA_INVALID', 'e8'],
      ['{"type":"input_audio_buffer.append","event_id":"e9"}', 'CHORUS_ERR_REQUEST_INVALID', 'e9'],
      [
        '{"type":"conversation.item.create","event_id":"e10","item":{"type":"message","role":"user",' +
          '"content":[{"type":"input_audio","audio":"AAE"}]}}',
        'CHORUS_ERR_MEDIA_INVALID',
        'e10',
      ],
      [
        '{"type":"conversation.item.create","event_id":"e11","previous_item_id":"item_missing",' +
          '"item":{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]}}',
        'CHORUS_ERR_REQUEST_INVALID',
        'e11',
      ],
      [Buffer.from([1, 2, 3]), 'CHORUS_ERR_REQUEST_INVALID', null],
      [
        JSON.stringify({ type: 'input_audio_buffer.append', event_id: 'big', audio: 'A'.repeat(MAX_FRAME + 1000) }),
        'CHORUS_ERR_REQUEST_TOO_LARGE',
        null,
      ],
    ];
    for (const [frame, code, eventId] of cases) {
      client.ws.send(frame);
      const err = await client.next('error');
      expect(err.error, String(frame).slice(0, 80)).toMatchObject({ code, event_id: eventId });
      expect(typeof (err.error as { message: string }).message).toBe('string');
    }
    expect((client.ofType('error')[4].error as { message: string }).message).toContain('supported: session.update');
    expect((client.ofType('error')[5].error as { param: string }).param).toBe('item');

    const done = await client.respond('still here?');
    expect((done.response as { status: string }).status).toBe('completed');
    client.close();
    await client.closed;
  });

  it('closes with 1009 on a frame too large to read, and the server keeps serving', async () => {
    const client = await RealtimeClient.connect(server.wsUrl);
    client.ws.send(Buffer.alloc(MAX_FRAME * 3, 0x61).toString());
    const closed = await client.closed;
    expect(closed.code).toBe(1009);

    const again = await RealtimeClient.connect(server.wsUrl);
    expect(((await again.respond('hello')).response as { status: string }).status).toBe('completed');
    again.close();
    await again.closed;
  });

  it('refuses to grow a full conversation, without starting a request', async () => {
    const small = await startTestServer({ maxConversationItems: 2 }, { script: defaultScript({ tokens: 1 }) });
    try {
      const client = await RealtimeClient.connect(small.wsUrl);
      expect(((await client.respond('one')).response as { status: string }).status).toBe('completed'); // 2 items now
      client.send({
        type: 'conversation.item.create',
        event_id: 'full',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x' }] },
      });
      const full = (await client.next('error')).error as { message: string };
      expect(full).toMatchObject({ code: 'CHORUS_ERR_REQUEST_INVALID', event_id: 'full' });
      expect(full.message).toContain('conversation.item.delete');
      client.send({ type: 'response.create', event_id: 'full2' });
      expect((await client.next('error')).error).toMatchObject({
        code: 'CHORUS_ERR_REQUEST_INVALID',
        event_id: 'full2',
      });
      expect(small.engine.handles).toHaveLength(1);
      // Out-of-band responses do not add to the conversation, so they still work.
      client.send({ type: 'response.create', response: { conversation: 'none' } });
      expect(((await client.next('response.done')).response as { status: string }).status).toBe('completed');
      // Deleting items makes room again.
      for (const added of client.ofType('conversation.item.added')) {
        client.send({ type: 'conversation.item.delete', item_id: (added.item as { id: string }).id });
        await client.next('conversation.item.deleted');
      }
      expect(((await client.respond('two')).response as { status: string }).status).toBe('completed');
      expect(small.engine.handles.at(-1)!.request.messages.map((m) => m.role)).toEqual(['user']);
      client.close();
    } finally {
      await small.app.close();
    }
  });

  it('leaves no session or request behind', async () => {
    // Closing is asynchronous on the server side too: wait until it has observed every close.
    for (let i = 0; i < 100 && (await activeSessions()) !== 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await activeSessions()).toBe(0);
    expect(server.engine.handles.every((h) => h.ended)).toBe(true);
  });
});

describe('bad HTTP requests', () => {
  async function post(body: string, contentType = 'application/json') {
    const res = await fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    return {
      status: res.status,
      body: (await res.json()) as { error: { code: string; message: string; param: string | null; type: string } },
    };
  }

  it('rejects malformed JSON, wrong fields, oversized bodies and unknown routes with stable codes', async () => {
    const cases: [string, number, string, string | null][] = [
      ['{oops', 400, 'CHORUS_ERR_REQUEST_INVALID', null],
      ['{}', 400, 'CHORUS_ERR_REQUEST_INVALID', 'messages'],
      [JSON.stringify({ messages: [] }), 400, 'CHORUS_ERR_REQUEST_INVALID', 'messages'],
      [
        JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] }),
        400,
        'CHORUS_ERR_REQUEST_INVALID',
        'messages[0].role',
      ],
      [
        JSON.stringify({ messages: [{ role: 'user', content: 'x' }], temperature: 9 }),
        400,
        'CHORUS_ERR_REQUEST_INVALID',
        'temperature',
      ],
      [
        JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 10 ** 7 }),
        400,
        'CHORUS_ERR_REQUEST_INVALID',
        'max_tokens',
      ],
      [
        JSON.stringify({
          messages: [{ role: 'user', content: 'x' }],
          modalities: ['text', 'audio'],
          audio: { voice: 'a', format: 'mp3' },
        }),
        400,
        'CHORUS_ERR_REQUEST_INVALID',
        'audio.format',
      ],
      [
        JSON.stringify({
          messages: [{ role: 'user', content: 'x' }],
          modalities: ['text', 'audio'],
          audio: { voice: 'a', format: 'wav' },
          stream: true,
        }),
        400,
        'CHORUS_ERR_REQUEST_INVALID',
        'audio.format',
      ],
      [
        JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(40 * 1024) }] }),
        413,
        'CHORUS_ERR_REQUEST_TOO_LARGE',
        null,
      ],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await post(body);
      expect(res.status, body.slice(0, 80)).toBe(status);
      expect(res.body.error, body.slice(0, 80)).toMatchObject({ code, param });
    }
    const wrongType = await post('x', 'text/plain');
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.error.code).toBe('CHORUS_ERR_REQUEST_INVALID');

    const missing = await fetch(`${server.base}/v1/nothing`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('CHORUS_ERR_NOT_FOUND');

    const ok = await post(JSON.stringify({ messages: [{ role: 'user', content: 'fine' }] }));
    expect(ok.status).toBe(200);
  });

  it('answers a body over the limit with its 413 after reading it to its end, declared or chunked', async () => {
    // Sent in pieces, as a client's stack sends a large body: a server that answered at the headers and closed would
    // leave the client writing into a closed connection (EPIPE, or a reset that loses the answer).
    for (const chunked of [false, true]) {
      const res = await rawPost(server.base, 'x'.repeat(8 * 1024 * 1024), chunked);
      expect(res.error, `chunked: ${chunked}`).toBeNull();
      expect(res.answeredWhileSending).toBe(false);
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body).error.code).toBe('CHORUS_ERR_REQUEST_TOO_LARGE');
    }
    const ok = await post(JSON.stringify({ messages: [{ role: 'user', content: 'still fine' }] }));
    expect(ok.status).toBe(200);
  });
});

/**
 * POSTs `body` to /v1/chat/completions over a plain socket, 16 KiB a write (with a Content-Length, or chunked), then
 * reads the whole answer; `error`: what the socket failed with, if anything; `answeredWhileSending`: a byte of the
 * answer came before the body's last byte was handed to the socket.
 */
async function rawPost(
  base: string,
  body: string,
  chunked: boolean,
): Promise<{ status: number; body: string; error: string | null; answeredWhileSending: boolean }> {
  const { port } = new URL(base);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  let error: string | null = null;
  let sending = true;
  let answeredWhileSending = false;
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    answeredWhileSending ||= sending;
  });
  socket.on('error', (err: NodeJS.ErrnoException) => (error = err.code ?? err.message));
  const closed = once(socket, 'close');
  const write = (data: string) => new Promise<void>((resolve) => socket.write(data, () => resolve()));
  const framing = chunked ? 'transfer-encoding: chunked' : `content-length: ${Buffer.byteLength(body)}`;
  const requestHead = [
    'POST /v1/chat/completions HTTP/1.1',
    `host: 127.0.0.1:${port}`,
    'content-type: application/json',
  ];
  await write(`${[...requestHead, framing].join('\r\n')}\r\n\r\n`);
  for (let at = 0; at < body.length && error === null; at += 16 * 1024) {
    const piece = body.slice(at, at + 16 * 1024);
    await write(chunked ? `${piece.length.toString(16)}\r\n${piece}\r\n` : piece);
  }
  if (chunked && error === null) await write('0\r\n\r\n');
  sending = false;
  // The answer's head and its JSON (a 413 has a Content-Length): read until it is all here, or the socket ends.
  const complete = () => {
    const head = received.indexOf('\r\n\r\n');
    const length = /content-length: (\d+)/i.exec(received.slice(0, head));
    return head >= 0 && length !== null && received.length - head - 4 >= Number(length[1]);
  };
  await Promise.race([closed, new Promise<void>((resolve) => socket.on('data', () => complete() && resolve()))]);
  socket.destroy();
  const head = received.indexOf('\r\n\r\n');
  return { status: Number(received.split(' ')[1]), body: received.slice(head + 4), error, answeredWhileSending };
}
