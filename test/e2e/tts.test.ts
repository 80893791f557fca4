/**
 * The tts stage served end to end behind the generated tiny Thinker (random weights: its answers are English words in
 * no order, which is enough to hear): a chat completion with text and audio gets the answer's text and, as its
 * transcript, the same text spoken by the Piper voice at 24 kHz, with the duration, voicing and level of speech
 * (eSpeak NG's reading of the same text as the duration reference); streamed, the speech comes phrase by phrase;
 * the Realtime API speaks the same way.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../src/media/wav.ts';
import { speechProblems, speechStats } from '../helpers/speechStats.ts';
import { decodeAudioDeltas, RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

let served: ServedPipeline | undefined;
let base: string;
let wsUrl: string;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-tts-e2e-'));
  served = await servePipeline(join(import.meta.dirname, 'tiny-tts.yaml'));
  ({ base, wsUrl } = served);
}, 180_000);

afterAll(async () => {
  await served?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** eSpeak NG's duration for the text, in seconds (Debian espeak-ng). */
function espeakSeconds(text: string): number {
  const wav = join(dir, 'espeak.wav');
  execFileSync('espeak-ng', ['-w', wav, text]);
  const pcm = decodeWav(readFileSync(wav));
  return pcm.samples.length / pcm.sampleRateHz;
}

async function chat(body: object): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Tell me about Paris.' }], ...body }),
  });
}

describe('tts stage behind a Thinker', () => {
  it('answers a chat completion with the text and its speech at 24 kHz', async () => {
    const res = await chat({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } });
    expect(res.status).toBe(200);
    const json = (await res.json()) as {
      choices: { finish_reason: string; message: { audio: { data: string; transcript: string } } }[];
    };
    const [choice] = json.choices;
    expect(choice.finish_reason).toBe('length'); // random weights never say EOS: the answer runs to max_tokens
    const { transcript, data } = choice.message.audio;
    expect(transcript.trim().split(/\s+/).length).toBeGreaterThanOrEqual(10);
    const wav = decodeWav(Buffer.from(data, 'base64'));
    expect(wav.sampleRateHz).toBe(24000);
    const stats = speechStats(wav.samples, wav.sampleRateHz);
    expect(speechProblems(stats, espeakSeconds(transcript)), transcript).toEqual([]);
  });

  it('streams the speech phrase by phrase', async () => {
    const res = await chat({ modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' }, stream: true });
    const events = (await res.text())
      .split('\n')
      .filter((l) => l.startsWith('data: {'))
      .map((l) => JSON.parse(l.slice(6)) as { choices: { delta: { audio?: { data?: string } } }[] });
    const audioChunks = events.filter((e) => e.choices[0]?.delta.audio?.data);
    // The first phrase (four words) and the rest: at least two pieces of audio, not one at the end.
    expect(audioChunks.length).toBeGreaterThanOrEqual(2);
  });

  it('speaks a Realtime response', async () => {
    const client = await RealtimeClient.connect(wsUrl);
    const done = await client.respond('Tell me about Paris.', {}, 60_000);
    // Random weights never say EOS: the answer runs to the stage's max_tokens, an incomplete response.
    expect((done.response as { status: string }).status).toBe('incomplete');
    const pcm = decodeAudioDeltas(client.events);
    const samples = Float32Array.from(pcm, (s) => s / 32768);
    const transcript = (done.response as { output: { content: { transcript?: string }[] }[] }).output
      .flatMap((o) => o.content.map((c) => c.transcript ?? ''))
      .join(' ');
    expect(speechProblems(speechStats(samples, 24000), espeakSeconds(transcript)), transcript).toEqual([]);
    client.close();
  });
});
