/**
 * The front end over the real pipeline (configs/tiny-omni-text-in.yaml: stage processes, ONNX models, shared memory):
 * realtime audio + transcript, prompt cancel, the official SDK streaming text + audio, HTTP streamed audio
 * equal to the WAV of the same seeded request, an unknown model and a completion cap beyond the context refused
 * with OpenAI's codes and the figures, health and stages, media refused by a pipeline without encoders;
 * on close nothing is left in /dev/shm. (Media over the multimodal pipeline: serverMedia.orchestrator.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { endianness } from 'node:os';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import { ownSegments, waitFor } from '../helpers/engine.ts';
import { pngBytes } from '../helpers/media.ts';
import { decodeAudioDeltas, RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const SAMPLES_PER_TOKEN = 2 * 1920; // tiny-omni: 2 codec frames per text token, 1920 samples per frame

let served: ServedPipeline | undefined;
let engine: Orchestrator;
let base: string;
let wsUrl: string;

beforeAll(async () => {
  served = await servePipeline();
  ({ engine, base, wsUrl } = served);
}, 240_000);

afterAll(async () => {
  await served?.close();
  expect(ownSegments()).toEqual([]);
});

function pcm16Of(buffer: Buffer): Int16Array {
  return new Int16Array(buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.length));
}

function maxDiff(a: Int16Array, b: Int16Array): number {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}

describe('server over the real pipeline', () => {
  it('reports every stage ready and describes the graph', async () => {
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    const body = (await health.json()) as { stages: { stage_id: string; status: string }[] };
    expect(body.stages.map((s) => [s.stage_id, s.status])).toEqual([
      ['thinker', 'ready'],
      ['talker', 'ready'],
      ['code2wav', 'ready'],
    ]);
    const stages = (await (await fetch(`${base}/v1/stages`)).json()) as {
      async_chunk: boolean;
      stages: { kind: string }[];
    };
    expect(stages.async_chunk).toBe(true);
    expect(stages.stages.map((s) => s.kind)).toEqual(['thinker', 'talker', 'code2wav']);
  });

  // cpu_wakeup_latency_us: 0 (the shipped configs): while a request is live main holds the machine's idle cores
  // polling (src/common/cpuWakeupLatency.ts), where it may write the kernel's file (root: CI), else it says so.
  it("holds the machine's idle cores polling while an answer is live", async () => {
    expect(engine.graph.cpuWakeupLatencyUs).toBe(0);
    const client = await RealtimeClient.connect(wsUrl);
    try {
      client.send({
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Tell me a long story.' }] },
      });
      client.send({ type: 'response.create', response: { max_output_tokens: 120, ignore_eos: true } });
      await client.next('response.output_audio.delta', () => true, 20_000);
      const exposition = await (await fetch(`${base}/metrics`)).text();
      const holds = Number(/^chorus_cpu_wakeup_latency_holds (\S+)$/m.exec(exposition)?.[1]);
      if (process.getuid?.() === 0) {
        expect(holds).toBeGreaterThanOrEqual(1);
        const kernel = readFileSync('/dev/cpu_dma_latency');
        expect(endianness() === 'LE' ? kernel.readInt32LE(0) : kernel.readInt32BE(0)).toBe(0);
      } else {
        expect(holds).toBe(0); // refused: no write access (the log said why)
      }
      await client.next('response.done', () => true, 30_000);
    } finally {
      client.close();
    }
  });

  it('streams a realtime answer: transcript deltas and pcm16 audio for every token', async () => {
    const client = await RealtimeClient.connect(wsUrl);
    const done = await client.respond('Tell me about the sea.', { max_output_tokens: 16, ignore_eos: true, seed: 7 });
    const response = done.response as {
      id: string;
      status: string;
      status_details: unknown;
      usage: { output_token_details: { text_tokens: number } };
    };
    expect(response.status).toBe('incomplete');
    expect(response.status_details).toEqual({ type: 'incomplete', reason: 'max_output_tokens' });
    expect(response.usage.output_token_details.text_tokens).toBe(16);
    const transcript = client
      .ofType('response.output_audio_transcript.delta')
      .map((e) => e.delta)
      .join('');
    expect(transcript.length).toBeGreaterThan(0);
    expect(client.ofType('response.output_audio_transcript.done')[0].transcript).toBe(transcript);
    const pcm = decodeAudioDeltas(client.events, response.id);
    expect(pcm.length).toBe(16 * SAMPLES_PER_TOKEN);
    expect(pcm.some((v) => v !== 0)).toBe(true);
    // async_chunk: audio arrives in several deltas (the next test shows it starts while text is still coming).
    expect(client.ofType('response.output_audio.delta').length).toBeGreaterThan(1);
    client.close();
  });

  it('with async_chunk, the first audio delta arrives before the last text delta', async () => {
    // A 300-token answer keeps the Thinker writing for a few hundred ms, far longer than the first audio packet
    // takes (Thinker prefill + a 4-frame initial chunk through Talker and Code2Wav), whatever the machine's load.
    const client = await RealtimeClient.connect(wsUrl);
    await client.respond('Tell me a long story.', { max_output_tokens: 300, ignore_eos: true, seed: 3 }, 60_000);
    const types = client.events.map((e) => e.type);
    const firstAudio = types.indexOf('response.output_audio.delta');
    const lastText = types.lastIndexOf('response.output_audio_transcript.delta');
    expect(firstAudio).toBeGreaterThan(-1);
    expect(firstAudio).toBeLessThan(lastText);
    client.close();
  });

  it('cancels a long realtime answer within 500 ms and the pipeline lets go of it', async () => {
    const client = await RealtimeClient.connect(wsUrl);
    client.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Talk forever' }] },
    });
    client.send({ type: 'response.create', response: { max_output_tokens: 2000, ignore_eos: true } });
    await client.next('response.output_audio.delta', () => true, 60_000);
    const sentAt = performance.now();
    client.send({ type: 'response.cancel' });
    const done = await client.next('response.done');
    expect(client.arrivals[client.events.indexOf(done)] - sentAt).toBeLessThan(500);
    expect((done.response as { status: string }).status).toBe('cancelled');
    await waitFor('stages to drop the cancelled request', () => engine.health().every((h) => h.inFlight === 0));
    client.close();
  });

  it('streams text and audio to the official SDK; the streamed pcm16 equals the WAV of the same request', async () => {
    const sdk = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const params = {
      model: 'chorus-tiny-omni-text-in',
      messages: [{ role: 'user' as const, content: 'Why is the sky blue?' }],
      modalities: ['text' as const, 'audio' as const],
      seed: 11,
      max_completion_tokens: 12,
      ...({ ignore_eos: true } as object),
    };
    const stream = await sdk.chat.completions.create({
      ...params,
      audio: { voice: 'alloy', format: 'pcm16' },
      stream: true,
    });
    let text = '';
    const audio: Buffer[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as
        { content?: string | null; audio?: { data?: string; transcript?: string } } | undefined;
      expect(delta?.content ?? '').toBe(''); // with audio on, the text comes once, as the transcript
      text += delta?.audio?.transcript ?? '';
      if (delta?.audio?.data) audio.push(Buffer.from(delta.audio.data, 'base64'));
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(finish).toBe('length');
    expect(text.length).toBeGreaterThan(0);
    const streamed = pcm16Of(Buffer.concat(audio));
    expect(streamed.length).toBe(12 * SAMPLES_PER_TOKEN);

    const whole = await sdk.chat.completions.create({ ...params, audio: { voice: 'alloy', format: 'wav' } });
    expect(whole.choices[0].message.content).toBeNull();
    expect(whole.choices[0].message.audio?.transcript).toBe(text);
    const wav = Buffer.from(whole.choices[0].message.audio!.data, 'base64');
    expect(wav.readUInt32LE(24)).toBe(24000);
    expect(maxDiff(pcm16Of(wav.subarray(44)), streamed)).toBeLessThanOrEqual(1);
  });

  it('an unknown model is a 404, a cap beyond the context a 400, each as the SDK knows it (issue 32)', async () => {
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
    // A model this server does not serve is a 404 naming the ones it does.
    const notFound = await client.chat.completions
      .create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
      .catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    expect(notFound).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
    expect((notFound as Error).message).toContain('"chorus-tiny-omni-text-in"');
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['chorus-tiny-omni-text-in']);
    // The served id is answered, and echoed.
    const ok = await client.chat.completions.create({
      model: 'chorus-tiny-omni-text-in',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 2,
    });
    expect(ok.model).toBe('chorus-tiny-omni-text-in');
    // A completion cap the Thinker's 4096 positions cannot hold after the prompt: a 400 with the figures (as vLLM).
    const tooLong = await client.chat.completions
      .create({
        model: 'chorus-tiny-omni-text-in',
        messages: [{ role: 'user', content: 'Tell me about the sea.' }],
        max_tokens: 4095,
      })
      .catch((e: unknown) => e);
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tooLong).toMatchObject({ status: 400, code: 'context_length_exceeded' });
    const figures = /However, you requested (\d+) tokens \((\d+) in the messages, 4095 in the completion\)/;
    expect((tooLong as Error).message).toContain("This model's maximum context length is 4096 tokens.");
    const [, total, prompt] = figures.exec((tooLong as Error).message)!.map(Number);
    expect(total).toBe(prompt + 4095);
    expect(prompt).toBeGreaterThan(1);
  });

  it('refuses media for which the pipeline has no encoder with a 400 naming the item', async () => {
    // The earlier tests' answers are complete for their clients before every stage's 'finished' has reached main
    // (the last chunk travels by shm, the notice by IPC): start from a pipeline that holds nothing.
    const idle = () => engine.health().every((h) => h.inFlight === 0);
    await waitFor('the earlier requests to leave every stage', idle);
    const image = `data:image/png;base64,${Buffer.from(pngBytes(32, 32)).toString('base64')}`;
    const res = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'See ' },
              { type: 'image_url', image_url: { url: image } },
            ],
          },
        ],
      }),
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string; param: string } };
    expect(error).toMatchObject({ code: 'CHORUS_ERR_MEDIA_INVALID', param: 'messages[0].content[1]' });
    expect(error.message).toMatch(/^messages\[0\]\.content\[1\] \(image\): this pipeline has no image encoder/);
    expect(idle()).toBe(true); // refused before admission
  });
});
