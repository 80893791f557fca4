/**
 * HTTP API through the official openai SDK (baseURL pointed at the server): streamed text+audio, WAV
 * responses, errors, cancellation on disconnect; plus /v1/models, /health and /v1/stages.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer } from './serverClient.ts';
import { defaultScript, expectedPcm16 } from './serverTestEngine.ts';

let server: Awaited<ReturnType<typeof startTestServer>>;
let client: OpenAI;

beforeAll(async () => {
  server = await startTestServer();
  client = new OpenAI({ baseURL: `${server.base}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => {
  await server.app.close();
});

/** The SDK types do not declare delta.audio (OpenAI sends it anyway); read it as data. */
type AudioDelta = { audio?: { id?: string; data?: string; transcript?: string } };

describe('chat completions', () => {
  it('streams text and pcm16 audio to the official SDK', async () => {
    server.engine.script = defaultScript({ tokens: 6, chunkSamples: 2400, tokensPerChunk: 2 });
    const stream = await client.chat.completions.create({
      model: 'chorus-test-omni',
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'Say hi' },
      ],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      seed: 7,
      max_completion_tokens: 50,
      // Chorus extensions ride along as extra body fields.
      ...({ ignore_eos: true, initial_codec_chunk_frames: 4 } as object),
    });
    let text = '';
    let transcript = '';
    const audio: Buffer[] = [];
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.choices).toHaveLength(1);
      const delta = chunk.choices[0].delta as (typeof chunk.choices)[0]['delta'] & AudioDelta;
      text += delta.content ?? '';
      transcript += delta.audio?.transcript ?? '';
      if (delta.audio?.data) audio.push(Buffer.from(delta.audio.data, 'base64'));
      finish = chunk.choices[0].finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(chunks).toBeGreaterThan(6);
    // Each text piece once, as OpenAI sends it with audio on: in the transcript, never also in content.
    expect(transcript).toBe('w0 w1 w2 w3 w4 w5 ');
    expect(text).toBe('');
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: 5, completion_tokens_details: { text_tokens: 6 } });
    const pcm = Buffer.concat(audio);
    expect(pcm.length).toBe(3 * 2400 * 2);
    expect(pcm.equals(Buffer.from(expectedPcm16(3 * 2400).buffer))).toBe(true);

    const request = server.engine.lastHandle.request;
    expect(request.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'Say hi' },
    ]);
    expect(request.modalities).toEqual(['text', 'audio']);
    expect(request.sampling).toMatchObject({ seed: 7, maxTokens: 50, ignoreEos: true });
    expect(request.initialCodecChunkFrames).toBe(4);
  });

  it('returns one message with the transcript and a WAV file (content null) when not streaming', async () => {
    server.engine.script = defaultScript({ tokens: 4, chunkSamples: 1000, tokensPerChunk: 1 });
    const completion = await client.chat.completions.create({
      model: 'chorus-test-omni',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'wav' },
    });
    const message = completion.choices[0].message;
    expect(message.content).toBeNull();
    expect(message.audio?.transcript).toBe('w0 w1 w2 w3 ');
    expect(completion.choices[0].finish_reason).toBe('stop');
    const wav = Buffer.from(message.audio!.data, 'base64');
    expect(wav.toString('ascii', 0, 4)).toBe('RIFF');
    expect(wav.toString('ascii', 8, 12)).toBe('WAVE');
    expect(wav.readUInt16LE(20)).toBe(1); // PCM
    expect(wav.readUInt16LE(22)).toBe(1); // mono
    expect(wav.readUInt32LE(24)).toBe(24000);
    expect(wav.readUInt16LE(34)).toBe(16);
    expect(wav.readUInt32LE(40)).toBe(4000 * 2);
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect(wav.subarray(44).equals(Buffer.from(expectedPcm16(4000).buffer))).toBe(true);
  });

  it('returns text only when audio is not asked for, with finish_reason length at the limit', async () => {
    server.engine.script = defaultScript({ tokens: 3 });
    server.engine.finishReason = 'length';
    try {
      const completion = await client.chat.completions.create({
        model: 'chorus-test-omni',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 3,
      });
      expect(completion.choices[0].message.content).toBe('w0 w1 w2 ');
      expect(completion.choices[0].message.audio).toBeUndefined();
      expect(completion.choices[0].finish_reason).toBe('length');
      expect(completion.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 });
      expect(server.engine.lastHandle.request.modalities).toEqual(['text']);
    } finally {
      server.engine.finishReason = 'stop';
    }
  });

  it('surfaces engine failures as API errors with the stable code, streaming or not', async () => {
    server.engine.script = () => [
      { kind: 'text', delta: 'a' },
      { kind: 'fail', code: 'CHORUS_ERR_STAGE_DIED', message: 'code2wav died' },
    ];
    const stream = await client.chat.completions.create({
      model: 'chorus-test-omni',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    const failure = await (async () => {
      try {
        for await (const _ of stream) void _;
      } catch (err) {
        return err;
      }
      return null;
    })();
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).code).toBe('CHORUS_ERR_STAGE_DIED');

    const plain = await client.chat.completions
      .create({ model: 'chorus-test-omni', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(plain).toBeInstanceOf(OpenAI.APIError);
    expect((plain as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
    expect((plain as InstanceType<typeof OpenAI.APIError>).code).toBe('CHORUS_ERR_STAGE_DIED');
  });

  it('cancels the request when a streaming client disconnects', async () => {
    server.engine.script = defaultScript({ tokens: 10_000, stepMs: 1 });
    const abort = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'chorus-test-omni', messages: [{ role: 'user', content: 'x' }], stream: true },
      { signal: abort.signal },
    );
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) break; // leaving the loop aborts the response body
    }
    const handle = server.engine.lastHandle;
    expect(await handle.finished).toBe('cancelled');
    expect(handle.cancelCalls).toBe(1);
  });

  it('cancels the request when a non-streaming client disconnects', async () => {
    server.engine.script = defaultScript({ tokens: 10_000, stepMs: 1 });
    const abort = new AbortController();
    const before = server.engine.handles.length;
    const pending = fetch(`${server.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
      signal: abort.signal,
    }).catch((e: unknown) => e);
    while (server.engine.handles.length === before) await new Promise((r) => setImmediate(r));
    abort.abort();
    await pending;
    const handle = server.engine.handles[before];
    expect(await handle.finished).toBe('cancelled');
  });
});

describe('info routes', () => {
  it('lists the model', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['chorus-test-omni']);
  });

  it('reports per-stage health, 503 while a stage is not ready', async () => {
    const ok = await fetch(`${server.base}/health`);
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { status: string; stages: { stage_id: string; status: string }[] };
    expect(body.status).toBe('ok');
    expect(body.stages.map((s) => s.stage_id)).toEqual(['thinker', 'talker', 'code2wav']);
    server.engine.healthStatus = ['ready', 'restarting', 'ready'];
    try {
      const down = await fetch(`${server.base}/health`);
      expect(down.status).toBe(503);
      expect(((await down.json()) as { stages: { status: string }[] }).stages[1].status).toBe('restarting');
    } finally {
      server.engine.healthStatus = ['ready', 'ready', 'ready'];
    }
  });

  it('describes the stage graph without file-system paths', async () => {
    const res = await fetch(`${server.base}/v1/stages`);
    const text = await res.text();
    expect(text).not.toContain('/nonexistent');
    expect(text).not.toContain('/tmp/models');
    const graph = JSON.parse(text) as {
      async_chunk: boolean;
      stages: { stage_id: string; kind: string }[];
      edges: unknown[];
    };
    expect(graph.async_chunk).toBe(true);
    expect(graph.stages.map((s) => s.kind)).toEqual(['thinker', 'talker', 'code2wav']);
    expect(graph.edges).toEqual([
      { from: 'thinker', to: 'talker', connector: 'shm0', kind: 'shm' },
      { from: 'talker', to: 'code2wav', connector: 'shm0', kind: 'shm' },
    ]);
  });
});
