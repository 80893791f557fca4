/**
 * The shipped real pipeline, configs/assistant.yaml (SmolLM2-135M-Instruct from its GGUF -> a Piper voice), as a
 * user runs it: a chat completion with text and audio gets a real answer that ends on the model's own EOS
 * (finish_reason stop, fewer tokens than max_tokens) and that answer spoken (24 kHz speech whose duration, level and
 * voicing are speech's, eSpeak NG's reading of the same text the duration reference); the Realtime API answers the
 * same question completed, in speech.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../src/media/wav.ts';
import { speechProblems, speechStats } from '../helpers/speechStats.ts';
import { decodeAudioDeltas, RealtimeClient, servePipeline } from './serverClient.ts';

const QUESTION = 'What is the capital of France?';
const MAX_TOKENS = 96;

let served: Awaited<ReturnType<typeof servePipeline>>;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-assistant-'));
  served = await servePipeline('assistant.yaml');
}, 300_000);

afterAll(async () => {
  await served?.app.close();
  await served?.engine.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** eSpeak NG's duration for the text, in seconds (Debian espeak-ng). */
function espeakSeconds(text: string): number {
  const wav = join(dir, 'espeak.wav');
  execFileSync('espeak-ng', ['-w', wav, text]);
  const pcm = decodeWav(readFileSync(wav));
  return pcm.samples.length / pcm.sampleRateHz;
}

describe('configs/assistant.yaml', () => {
  it('answers in text ending on EOS, and speaks that answer', async () => {
    const res = await fetch(`${served.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [{ role: 'user', content: QUESTION }],
        max_tokens: MAX_TOKENS,
        modalities: ['text', 'audio'],
        audio: { voice: 'alloy', format: 'wav' },
      }),
    });
    expect(res.status).toBe(200);
    const json = (await res.json()) as {
      choices: { finish_reason: string; message: { audio: { data: string; transcript: string } } }[];
      usage: { completion_tokens: number; completion_tokens_details: { text_tokens: number } };
    };
    const [choice] = json.choices;
    expect(choice.finish_reason).toBe('stop');
    expect(json.usage.completion_tokens_details.text_tokens).toBeLessThan(MAX_TOKENS);
    const { transcript, data } = choice.message.audio;
    expect(transcript).toMatch(/Paris/);
    const wav = decodeWav(Buffer.from(data, 'base64'));
    expect(wav.sampleRateHz).toBe(24000);
    expect(speechProblems(speechStats(wav.samples, wav.sampleRateHz), espeakSeconds(transcript)), transcript).toEqual(
      [],
    );
  });

  it('answers a Realtime response completed, in speech', async () => {
    const client = await RealtimeClient.connect(served.wsUrl);
    const done = await client.respond(QUESTION, {}, 120_000);
    const response = done.response as { status: string; output: { content: { transcript?: string }[] }[] };
    expect(response.status).toBe('completed');
    const transcript = response.output.flatMap((o) => o.content.map((c) => c.transcript ?? '')).join(' ');
    expect(transcript).toMatch(/Paris/);
    const samples = Float32Array.from(decodeAudioDeltas(client.events), (s) => s / 32768);
    expect(speechProblems(speechStats(samples, 24000), espeakSeconds(transcript)), transcript).toEqual([]);
    client.close();
  });
});
