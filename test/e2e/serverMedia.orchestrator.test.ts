/**
 * Media input through the front end over the real multimodal pipeline (configs/tiny-omni.yaml: audio and image
 * encoder stages, Thinker, Talker, Code2Wav as processes, ONNX models, shared memory): the official SDK sends an
 * image and a WAV and gets text and audio back; a repeated image is an encoder cache hit on /metrics; remote URLs
 * and bad media are 400s naming the item and the server goes on; realtime input audio is answered with audio.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import OpenAI from 'openai';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { channelNames } from '../../src/common/diagnostics.ts';
import { ownSegments, waitFor } from '../helpers/engine.ts';
import { decodeAudioDeltas, parsePrometheus, RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const SAMPLES_PER_TOKEN = 2 * 1920; // tiny-omni: 2 codec frames per text token, 1920 samples per frame

/** A PNG of a seeded colour pattern, made with pngjs. */
function makePng(width: number, height: number, seed: number): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = 4 * (y * width + x);
      png.data[i] = (x * 7 + seed * 31) % 256;
      png.data[i + 1] = (y * 5 + seed * 17) % 256;
      png.data[i + 2] = ((x ^ y) + seed * 13) % 256;
      png.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

/** Little-endian pcm16 of a tone. */
function tone(seconds: number, rateHz: number, hz: number): Buffer {
  const out = Buffer.alloc(2 * Math.round(seconds * rateHz));
  for (let i = 0; i < out.length / 2; i++)
    out.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rateHz)), 2 * i);
  return out;
}

/** A 16-bit mono WAV, header written by hand (RIFF, fmt, data). */
function makeWav(pcm16: Buffer, rateHz: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(36 + pcm16.length, 4);
  header.write('WAVEfmt ', 8, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(rateHz, 24);
  header.writeUInt32LE(2 * rateHz, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  header.writeUInt32LE(pcm16.length, 40);
  return Buffer.concat([header, pcm16]);
}

const pngUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString('base64')}`;

let served: ServedPipeline | undefined;
let engine: Orchestrator;
let base: string;
let wsUrl: string;
let sdk: OpenAI;

beforeAll(async () => {
  served = await servePipeline('tiny-omni.yaml');
  ({ engine, base, wsUrl } = served);
  sdk = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 240_000);

afterAll(async () => {
  await served?.close();
  expect(ownSegments()).toEqual([]);
});

/** /metrics, parsed strictly; the encoder cache counters of an instance. */
/** Resolves with the next stats report main receives from `instance`. */
function nextStatsOf(instance: string): Promise<void> {
  return new Promise((resolve) => {
    const onStats = (m: unknown) => {
      if ((m as { instance?: string }).instance !== instance) return;
      unsubscribe(channelNames.stageStats, onStats);
      resolve();
    };
    subscribe(channelNames.stageStats, onStats);
  });
}

async function encoderCache(instance: string) {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  const m = parsePrometheus(await res.text());
  const value = (name: string) => m.get(name)?.samples.find((s) => s.labels.stage === instance)?.value ?? 0;
  return {
    hits: value('chorus_encoder_cache_hits_total'),
    misses: value('chorus_encoder_cache_misses_total'),
    bytes: value('chorus_encoder_cache_bytes'),
  };
}

async function chat(
  body: object,
): Promise<{ status: number; body: { error?: { code: string; message: string; param: string | null } } }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { error?: { code: string; message: string; param: string | null } },
  };
}

const ask = (parts: object[], extra: object = {}) => ({
  messages: [{ role: 'user', content: parts }],
  max_completion_tokens: 4,
  seed: 1,
  ...extra,
});

describe('media over the real multimodal pipeline', () => {
  it('the official SDK sends an image and a WAV and streams text and audio back', async () => {
    const stream = await sdk.chat.completions.create({
      model: 'chorus-tiny-omni',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What do you see and hear? ' },
            { type: 'image_url', image_url: { url: pngUrl(makePng(96, 64, 1)) } },
            {
              type: 'input_audio',
              input_audio: { data: makeWav(tone(1, 16000, 440), 16000).toString('base64'), format: 'wav' },
            },
          ],
        },
      ],
      modalities: ['text', 'audio'],
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
      stream_options: { include_usage: true },
      max_completion_tokens: 8,
      seed: 5,
      ...({ ignore_eos: true } as object),
    });
    let text = '';
    const audio: Buffer[] = [];
    let finish: string | null = null;
    let promptTokens = 0;
    let details: { text_tokens: number; audio_tokens: number; image_tokens: number } | undefined;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { audio?: { data?: string; transcript?: string } } | undefined;
      text += delta?.audio?.transcript ?? '';
      if (delta?.audio?.data) audio.push(Buffer.from(delta.audio.data, 'base64'));
      finish = chunk.choices[0]?.finish_reason ?? finish;
      promptTokens = chunk.usage?.prompt_tokens ?? promptTokens;
      details = (chunk.usage?.prompt_tokens_details as typeof details) ?? details;
    }
    expect(finish).toBe('length');
    expect(text.length).toBeGreaterThan(0);
    expect(Buffer.concat(audio).length / 2).toBe(8 * SAMPLES_PER_TOKEN);
    // The prompt holds the media's embeddings: 25 per second of audio, and the image's patch groups; usage says
    // which positions each modality filled.
    expect(promptTokens).toBeGreaterThan(25);
    expect(details!.audio_tokens).toBeGreaterThanOrEqual(25);
    expect(details!.image_tokens).toBeGreaterThan(0);
    expect(details!.text_tokens + details!.audio_tokens + details!.image_tokens).toBe(promptTokens);
  }, 30_000);

  it('the same image twice is one encoder run: /metrics counts a cache hit', async () => {
    // Stats reach main every 250 ms: a report sent from now on has counted every earlier request's items.
    await nextStatsOf('image-encoder#0');
    const before = await encoderCache('image-encoder#0');
    const image = pngUrl(makePng(120, 80, 2));
    const parts = [
      { type: 'text', text: 'Describe: ' },
      { type: 'image_url', image_url: { url: image } },
    ];
    const first = await chat(ask(parts));
    // Other words before the image: the Thinker's prefix cache does not hold the repeat's image positions, so main
    // sends the image to the encoder (a prompt it holds goes to no encoder: src/engine/heldItems.ts).
    const second = await chat(ask([{ type: 'text', text: 'Describe it again: ' }, parts[1]]));
    expect([first.status, second.status]).toEqual([200, 200]);
    // Encoder stats reach main every 250 ms: wait for the report that covers both requests.
    let now = before;
    const deadline = Date.now() + 10_000;
    while (now.hits + now.misses < before.hits + before.misses + 2) {
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for the image encoder's stats to count both requests: ${JSON.stringify(now)}`,
        );
      await new Promise((r) => setTimeout(r, 50));
      now = await encoderCache('image-encoder#0');
    }
    expect(now.misses - before.misses).toBe(1);
    expect(now.hits - before.hits).toBe(1);
    expect(now.bytes).toBeGreaterThan(0); // the rows stay cached
  });

  it('refuses remote URLs and bad media with 400s naming the item; the server answers the next request', async () => {
    const remote = await sdk.chat.completions
      .create({
        model: 'chorus-tiny-omni',
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] },
        ],
      })
      .catch((e: unknown) => e);
    expect(remote).toBeInstanceOf(OpenAI.APIError);
    expect(remote).toMatchObject({ status: 400, code: 'CHORUS_ERR_MEDIA_REMOTE_URL' });

    const garbage = await chat(
      ask([
        { type: 'text', text: 'Hear: ' },
        { type: 'input_audio', input_audio: { data: '!!not base64!!', format: 'wav' } },
      ]),
    );
    expect(garbage.status).toBe(400);
    expect(garbage.body.error).toMatchObject({
      code: 'CHORUS_ERR_MEDIA_INVALID',
      param: 'messages[0].content[1]',
      message: 'messages[0].content[1] (audio): data is not valid base64',
    });

    const notImage = await chat(
      ask([
        { type: 'text', text: 'See: ' },
        {
          type: 'image_url',
          image_url: { url: `data:image/png;base64,${Buffer.from('just some text, no pixels').toString('base64')}` },
        },
      ]),
    );
    expect(notImage.status).toBe(400);
    expect(notImage.body.error).toMatchObject({ code: 'CHORUS_ERR_MEDIA_INVALID', param: 'messages[0].content[1]' });
    expect(notImage.body.error!.message).toMatch(/^messages\[0\]\.content\[1\] \(image\): /);

    // A PNG whose header is fine but whose pixels are not only fails in the encoder stage: still a 400, streaming too.
    const corrupt = makePng(64, 64, 3);
    corrupt.fill(0, 60);
    const inBand = await chat(
      ask(
        [
          { type: 'text', text: 'See: ' },
          { type: 'image_url', image_url: { url: pngUrl(corrupt) } },
        ],
        { stream: true },
      ),
    );
    expect(inBand.status).toBe(400);
    expect(inBand.body.error).toMatchObject({ code: 'CHORUS_ERR_MEDIA_INVALID', param: 'messages[0].content[1]' });
    expect(inBand.body.error!.message).toMatch(/^messages\[0\]\.content\[1\] \(image\): cannot decode PNG/);

    const next = await sdk.chat.completions.create({
      model: 'chorus-tiny-omni',
      messages: [{ role: 'user', content: 'Still there?' }],
      max_completion_tokens: 3,
    });
    expect(next.choices[0].message.content!.length).toBeGreaterThan(0);
    await waitFor('every stage to drop the failed requests', () => engine.health().every((h) => h.inFlight === 0));
  });

  it('realtime: appended and committed input audio is answered with audio', async () => {
    const client = await RealtimeClient.connect(wsUrl);
    const pcm = tone(0.8, 24000, 300);
    for (let at = 0; at < pcm.length; at += 9600)
      client.send({ type: 'input_audio_buffer.append', audio: pcm.subarray(at, at + 9600).toString('base64') });
    client.send({ type: 'input_audio_buffer.commit' });
    await client.next('input_audio_buffer.committed');
    client.send({ type: 'response.create', response: { max_output_tokens: 6, ignore_eos: true, seed: 2 } });
    const done = await client.next('response.done', () => true, 30_000);
    const response = done.response as { id: string; status: string; usage: { input_tokens: number } };
    expect(response.status).toBe('incomplete'); // max_output_tokens reached
    expect(decodeAudioDeltas(client.events, response.id).length).toBe(6 * SAMPLES_PER_TOKEN);
    expect(response.usage.input_tokens).toBeGreaterThanOrEqual(20); // 0.8 s of audio is 20 embeddings
    client.close();
  }, 30_000);
});
