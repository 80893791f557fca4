/**
 * Media input at the protocol level, over the Engine test double with a graph that has audio and image encoders:
 * what reaches the engine (parts, bytes, order), fetching from an allow-listed URL (and everything a fetch may not
 * do), media errors with the client's own item names, warnings in both protocols, the realtime input audio buffer
 * and media items, and an item whose media fails to decode being dropped from the conversation.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { map } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageGraph, StageSpec } from '../../src/common/graph.ts';
import type { ContentPart, Engine, GenerateRequest, RequestHandle } from '../../src/common/engine.ts';
import { buildServer } from '../../src/server/app.ts';
import { pcm16Bytes, pngBytes, wavBytes } from '../helpers/media.ts';
import { listen } from '../helpers/servePipeline.ts';
import { RealtimeClient } from './serverClient.ts';
import { defaultScript, TestEngine, testGraph, type ScriptStep } from './serverTestEngine.ts';

function encoderStage(stageId: string, modality: 'audio' | 'image'): StageSpec {
  return {
    ...testGraph.stages[0],
    stageId,
    kind: 'encoder',
    workerType: 'generation',
    inputs: [],
    finalOutput: false,
    finalOutputType: null,
    encoder: {
      modality,
      cacheBytes: 1 << 20,
      budgetEmbeddings: 2048,
      maxBatchSize: 8,
      batchTimeoutMs: 5,
      onFailure: 'fail',
      maxAudioSeconds: 60,
      timeoutMs: 1000,
      maxEncodeBytes: null,
      imageGrid: null,
      video: null,
    },
  };
}

const mmGraph: StageGraph = {
  ...testGraph,
  stages: [
    encoderStage('audio-encoder', 'audio'),
    encoderStage('image-encoder', 'image'),
    {
      ...testGraph.stages[0],
      inputs: [
        { from: 'audio-encoder', connector: 'shm0' },
        { from: 'image-encoder', connector: 'shm0' },
      ],
    },
    ...testGraph.stages.slice(1),
  ],
};

/** The test double with encoders in its graph; `warnings` are added to every done event, as the engine's are. */
class MediaEngine implements Engine {
  readonly graph = mmGraph;
  readonly audioOutput = { sampleRateHz: 24000, samplesPerFrame: 1920, framesPerToken: null };
  readonly inner = new TestEngine({ script: defaultScript({ tokens: 3 }) });
  warnings: ((r: GenerateRequest) => string[]) | null = null;

  get requests(): GenerateRequest[] {
    return this.inner.handles.map((h) => h.request);
  }

  generate(request: GenerateRequest): RequestHandle {
    const h = this.inner.generate(request);
    const warn = this.warnings;
    if (!warn) return h;
    const events = h.events.pipe(map((e) => (e.type === 'done' ? { ...e, warnings: warn(request) } : e)));
    return {
      requestId: h.requestId,
      prompt: h.prompt,
      events,
      cancel: () => h.cancel(),
      pause: () => h.pause(),
      resume: () => h.resume(),
    };
  }

  health() {
    return this.inner.health();
  }

  async close(): Promise<void> {
    await this.inner.close();
  }
}

/** Where the engine would name the first image of a request: "messages[i].content[j] (image)". */
function firstImageName(r: GenerateRequest): string {
  for (const [i, m] of r.messages.entries()) {
    if (typeof m.content === 'string') continue;
    const j = m.content.findIndex((p) => p.type === 'image');
    if (j >= 0) return `messages[${i}].content[${j}] (image)`;
  }
  throw new Error('no image in the request');
}

const failOnImage = (r: GenerateRequest): ScriptStep[] => [
  {
    kind: 'fail',
    code: 'CHORUS_ERR_MEDIA_INVALID',
    message: `${firstImageName(r)}: cannot decode PNG: invalid block type`,
  },
];

/**
 * Parts with their bytes as plain Uint8Arrays (the server may hand the engine Buffers, a subclass): compares content.
 */
const plainBytes = (parts: readonly ContentPart[]) =>
  parts.map((p) => (p.type === 'text' ? p : { ...p, data: new Uint8Array(p.data) }));

const png = pngBytes(40, 30, 3);
const dataUrl = (bytes: Uint8Array, type = 'image/png') =>
  `data:${type};base64,${Buffer.from(bytes).toString('base64')}`;
const FETCH_MAX_BYTES = 64 * 1024;

let engine: MediaEngine;
let app: FastifyInstance;
let base: string;
let wsUrl: string;
let media: Server;
let mediaBase: string;
let slowRequests = 0;

beforeAll(async () => {
  media = createServer((req, res) => {
    switch (req.url) {
      case '/ok/cat.png':
        return res.writeHead(200, { 'content-type': 'image/png' }).end(png);
      case '/ok/big.png':
        return res
          .writeHead(200, { 'content-type': 'image/png', 'content-length': FETCH_MAX_BYTES + 1 })
          .end(Buffer.alloc(FETCH_MAX_BYTES + 1));
      case '/ok/endless.png': // no content-length: only counting while reading catches it
        res.writeHead(200, { 'content-type': 'image/png' });
        for (let i = 0; i < 10; i++) res.write(Buffer.alloc(16 * 1024));
        return res.end();
      case '/ok/moved.png':
        return res.writeHead(302, { location: `${mediaBase}/private/cat.png` }).end();
      case '/ok/slow.png':
        slowRequests++;
        return; // never answers
      default:
        return res.writeHead(404).end();
    }
  });
  media.listen(0, '127.0.0.1');
  await once(media, 'listening');
  const address = media.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  mediaBase = `http://127.0.0.1:${address.port}`;

  engine = new MediaEngine();
  app = buildServer(engine, {
    apiKey: null,
    mediaUrlAllowList: [`${mediaBase}/ok/`],
    mediaFetchTimeoutMs: 300,
    mediaFetchMaxBytes: FETCH_MAX_BYTES,
  });
  ({ base, wsUrl } = await listen(app));
});

afterAll(async () => {
  await app?.close();
  media?.closeAllConnections();
  media?.close();
});

async function chat(body: object): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let json: Record<string, unknown> = {};
  if ((res.headers.get('content-type') ?? '').includes('json')) json = JSON.parse(text) as Record<string, unknown>;
  return { status: res.status, json, text };
}

const withImage = (url: string, extra: object = {}) => ({
  messages: [
    { role: 'assistant', content: null },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is it?' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
  ...extra,
});

describe('HTTP media', () => {
  it('fetches an image from an allow-listed URL into the request', async () => {
    engine.inner.script = defaultScript({ tokens: 3 });
    const r = await chat(withImage(`${mediaBase}/ok/cat.png`));
    expect(r.status).toBe(200);
    const parts = plainBytes(engine.requests.at(-1)!.messages[0].content as ContentPart[]);
    expect(parts[1]).toEqual({ type: 'image', data: new Uint8Array(png) });
  });

  it('refuses what a fetch may not do: outside the list, redirects, too big, too slow, not found', async () => {
    const before = engine.requests.length;
    const cases: [string, number, string, RegExp][] = [
      [`${mediaBase}/private/cat.png`, 400, 'CHORUS_ERR_MEDIA_REMOTE_URL', /remote URLs are not fetched/],
      [
        `${mediaBase}/ok/moved.png`,
        400,
        'CHORUS_ERR_MEDIA_INVALID',
        /redirects \(HTTP 302\); redirects are not followed/,
      ],
      [
        `${mediaBase}/ok/big.png`,
        400,
        'CHORUS_ERR_MEDIA_INVALID',
        new RegExp(`is ${FETCH_MAX_BYTES + 1} bytes; this server fetches at most ${FETCH_MAX_BYTES}`),
      ],
      [`${mediaBase}/ok/endless.png`, 400, 'CHORUS_ERR_MEDIA_INVALID', new RegExp(`over ${FETCH_MAX_BYTES} bytes`)],
      [`${mediaBase}/ok/slow.png`, 400, 'CHORUS_ERR_MEDIA_INVALID', /did not answer within 300 ms/],
      [`${mediaBase}/ok/missing.png`, 400, 'CHORUS_ERR_MEDIA_INVALID', /gave HTTP 404/],
    ];
    for (const [url, status, code, message] of cases) {
      const r = await chat(withImage(url));
      expect([r.status, (r.json.error as { code: string }).code], url).toEqual([status, code]);
      const error = r.json.error as { message: string; param: string | null };
      expect(error.message, url).toMatch(/^messages\[1\]\.content\[1\] \(image\): /); // the body's own indices
      expect(error.message, url).toMatch(message);
    }
    expect(slowRequests).toBe(1);
    expect(engine.requests.length).toBe(before); // nothing reached the engine
  });

  it('names media the engine refuses in-band by the body index, with a real 400 even when streaming', async () => {
    engine.inner.script = failOnImage;
    for (const stream of [false, true]) {
      const r = await chat(withImage(dataUrl(png), { stream }));
      expect(r.status, `stream ${stream}`).toBe(400);
      expect(r.json.error).toEqual({
        code: 'CHORUS_ERR_MEDIA_INVALID',
        type: 'invalid_request_error',
        message: 'messages[1].content[1] (image): cannot decode PNG: invalid block type', // the engine said messages[0]
        param: 'messages[1].content[1]',
      });
    }
    engine.inner.script = defaultScript({ tokens: 3 });
    expect((await chat(withImage(dataUrl(png)))).status).toBe(200); // and the server goes on
  });

  it('reports warnings as chorus_warnings on the completion and on the final chunk', async () => {
    engine.inner.script = defaultScript({ tokens: 2 });
    engine.warnings = (r) => [
      `${firstImageName(r)} was left out of the answer: CHORUS_ERR_CHUNK_TIMEOUT: no rows in time`,
    ];
    try {
      const expected = [
        'messages[1].content[1] (image) was left out of the answer: CHORUS_ERR_CHUNK_TIMEOUT: no rows in time',
      ];
      const whole = await chat(withImage(dataUrl(png)));
      expect(whole.json.chorus_warnings).toEqual(expected);
      const streamed = await chat(withImage(dataUrl(png), { stream: true }));
      const chunks = streamed.text
        .split('\n\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
      expect(chunks.at(-1)!.chorus_warnings).toEqual(expected);
      expect(chunks.slice(0, -1).every((c) => !('chorus_warnings' in c))).toBe(true);
      engine.warnings = () => [];
      // OpenAI's shape when there is nothing to say
      expect('chorus_warnings' in (await chat(withImage(dataUrl(png)))).json).toBe(false);
    } finally {
      engine.warnings = null;
    }
  });
});

describe('realtime media', () => {
  it('commits the input audio buffer as a pcm16 24 kHz audio part the engine receives', async () => {
    engine.inner.script = defaultScript({ tokens: 2 });
    const client = await RealtimeClient.connect(wsUrl);
    const audio = pcm16Bytes(0.2, 24000, 4);
    client.send({ type: 'input_audio_buffer.append', audio: Buffer.from(audio.subarray(0, 4000)).toString('base64') });
    client.send({ type: 'input_audio_buffer.append', audio: Buffer.from(audio.subarray(4000)).toString('base64') });
    client.send({ type: 'input_audio_buffer.commit' });
    const committed = await client.next('input_audio_buffer.committed');
    expect((await client.next('conversation.item.added')).item).toMatchObject({
      id: committed.item_id,
      role: 'user',
      content: [{ type: 'input_audio', transcript: null }],
    });
    client.send({ type: 'response.create' });
    expect((await client.next('response.done')).response).toMatchObject({ status: 'completed' });
    const request = engine.requests.at(-1)!;
    expect(request.messages.map((m) => m.role)).toEqual(['user']);
    expect(plainBytes(request.messages[0].content as ContentPart[])).toEqual([
      { type: 'audio', data: new Uint8Array(audio), format: 'pcm16', sampleRateHz: 24000 },
    ]);
    // The server's copy of the turn, as committed: the audio comes back only when asked for.
    client.send({ type: 'conversation.item.retrieve', item_id: committed.item_id });
    expect((await client.next('conversation.item.retrieved')).item).toMatchObject({
      id: committed.item_id,
      role: 'user',
      content: [{ type: 'input_audio', transcript: null, audio: Buffer.from(audio).toString('base64') }],
    });
    client.close();
  });

  it("frees an item's media when it is deleted: the session's media budget takes new audio again", async () => {
    const budget = 24_000; // 0.5 s of pcm16 at 24 kHz
    const small = buildServer(engine, { apiKey: null, maxInputAudioBytes: budget });
    const { wsUrl: smallWsUrl } = await listen(small);
    try {
      const client = await RealtimeClient.connect(smallWsUrl);
      const clip = Buffer.from(pcm16Bytes(0.3, 24000, 5)).toString('base64'); // 14,400 bytes
      const say = (eventId: string) =>
        client.send({
          type: 'conversation.item.create',
          event_id: eventId,
          item: { type: 'message', role: 'user', content: [{ type: 'input_audio', audio: clip }] },
        });
      say('first');
      const first = (await client.next('conversation.item.added')).item as { id: string };
      say('over');
      expect((await client.next('error')).error).toMatchObject({
        code: 'CHORUS_ERR_REQUEST_TOO_LARGE',
        event_id: 'over',
      });
      client.send({ type: 'conversation.item.delete', item_id: first.id });
      await client.next('conversation.item.deleted');
      say('again');
      expect(((await client.next('conversation.item.added')).item as { id: string }).id).not.toBe(first.id);
      client.close();
    } finally {
      await small.close();
    }
  });

  it(
    'takes input_image and input_audio items; every later response sees their media; refuses bad media at ' + 'once',
    async () => {
      engine.inner.script = defaultScript({ tokens: 2 });
      const client = await RealtimeClient.connect(wsUrl);
      const wav = wavBytes(0.3, 16000, 2);
      client.send({
        type: 'conversation.item.create',
        item: {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'Compare ' },
            { type: 'input_image', image_url: dataUrl(png) },
            { type: 'input_audio', audio: Buffer.from(wav).toString('base64'), format: 'wav', transcript: 'hi' },
          ],
        },
      });
      const added = await client.next('conversation.item.added');
      expect(added.item).toMatchObject({
        content: [
          { type: 'input_text', text: 'Compare ' },
          { type: 'input_image' },
          { type: 'input_audio', transcript: 'hi' },
        ],
      });
      const bad: [object, string, string, RegExp][] = [
        [
          { type: 'input_image', image_url: dataUrl(new TextEncoder().encode('not an image')) },
          'CHORUS_ERR_MEDIA_INVALID',
          'bad_image',
          /^item\.content\[0\] \(image\): /,
        ],
        [
          { type: 'input_image', image_url: 'https://example.com/cat.png' },
          'CHORUS_ERR_MEDIA_REMOTE_URL',
          'remote',
          /realtime sessions take images inline only/,
        ],
        [
          { type: 'input_audio', audio: Buffer.from('RIFF....WAVE').toString('base64'), format: 'wav' },
          'CHORUS_ERR_MEDIA_INVALID',
          'bad_wav',
          /^item\.content\[0\] \(audio\): /,
        ],
        [{ type: 'input_image' }, 'CHORUS_ERR_REQUEST_INVALID', 'no_url', /image_url is required/],
      ];
      for (const [part, code, eventId, message] of bad) {
        client.send({
          type: 'conversation.item.create',
          event_id: eventId,
          item: { type: 'message', role: 'user', content: [part] },
        });
        const error = (await client.next('error')).error as { code: string; event_id: string; message: string };
        expect(error, eventId).toMatchObject({ code, event_id: eventId });
        expect(error.message, eventId).toMatch(message);
      }
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'assistant', content: [{ type: 'input_image', image_url: dataUrl(png) }] },
      });
      expect(((await client.next('error')).error as { message: string }).message).toContain(
        'only allowed in user messages',
      );

      client.send({ type: 'response.create', response: { output_modalities: ['text'] } });
      await client.next('response.done');
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And now?' }] },
      });
      client.send({ type: 'response.create', response: { output_modalities: ['text'] } });
      await client.next('response.done');
      const parts = plainBytes(engine.requests.at(-1)!.messages[0].content as ContentPart[]);
      expect(parts).toEqual([
        { type: 'text', text: 'Compare ' },
        { type: 'image', data: new Uint8Array(png) },
        { type: 'audio', data: new Uint8Array(wav), format: 'wav' },
      ]);
      // Retrieved, the item gives its media back as it was sent.
      client.send({ type: 'conversation.item.retrieve', item_id: (added.item as { id: string }).id });
      expect(((await client.next('conversation.item.retrieved')).item as { content: unknown }).content).toEqual([
        { type: 'input_text', text: 'Compare ' },
        { type: 'input_image', image_url: dataUrl(png) },
        { type: 'input_audio', transcript: 'hi', audio: Buffer.from(wav).toString('base64'), format: 'wav' },
      ]);
      expect(engine.requests.at(-1)!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
      client.close();
    },
  );

  it('names media by item in failures and warnings, and drops an item whose media fails to decode', async () => {
    const client = await RealtimeClient.connect(wsUrl);
    client.send({ type: 'session.update', session: { instructions: 'Be brief.', output_modalities: ['text'] } });
    client.send({
      type: 'conversation.item.create',
      item: {
        type: 'message',
        role: 'user',
        id: 'item_pic',
        content: [
          { type: 'input_text', text: 'See' },
          { type: 'input_image', image_url: dataUrl(png) },
        ],
      },
    });
    await client.next('conversation.item.added');

    engine.inner.script = defaultScript({ tokens: 2 });
    engine.warnings = (r) => [
      `${firstImageName(r)} was left out of the answer: CHORUS_ERR_STAGE_DIED: image encoder died`,
    ];
    client.send({ type: 'response.create' });
    const warned = (await client.next('response.done')).response as Record<string, unknown>;
    engine.warnings = null;
    expect(warned.status).toBe('completed');
    // The engine said messages[1] (the instructions are messages[0]); the client knows the item.
    expect(warned.chorus_warnings).toEqual([
      'item item_pic content[1] (image) was left out of the answer: CHORUS_ERR_STAGE_DIED: image encoder died',
    ]);

    engine.inner.script = failOnImage;
    client.send({ type: 'response.create' });
    const failed = (await client.next('response.done')).response as {
      status: string;
      status_details: { error: { code: string; message: string } };
    };
    expect(failed.status).toBe('failed');
    expect(failed.status_details.error).toMatchObject({
      code: 'CHORUS_ERR_MEDIA_INVALID',
      message: 'item item_pic content[1] (image): cannot decode PNG: invalid block type',
    });
    expect((await client.next('conversation.item.deleted')).item_id).toBe('item_pic');

    engine.inner.script = defaultScript({ tokens: 2 });
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello?' }] },
    });
    client.send({ type: 'response.create' });
    expect((await client.next('response.done')).response).toMatchObject({ status: 'completed' });
    const messages = engine.requests.at(-1)!.messages;
    expect(messages.some((m) => typeof m.content !== 'string')).toBe(false); // the undecodable image is gone
    expect(messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
    client.close();
  });
});
