/**
 * The shipped real pipeline, configs/assistant.yaml (SmolLM2-135M-Instruct from its GGUF -> a Piper voice), as a
 * user runs it: a chat completion with text and audio gets a real answer that ends on the model's own EOS
 * (finish_reason stop, fewer tokens than max_tokens) and that answer spoken (24 kHz speech whose duration, level and
 * voicing are speech's, eSpeak NG's reading of the same text the duration reference); the Realtime API answers the
 * same question completed, in speech; twenty simple questions get English answers that end on their own (the words
 * checked against Debian's wamerican word list, as a person listening would notice gibberish). Speech in: the
 * question spoken (eSpeak NG) into a Realtime session with server_vad is heard through Whisper (its transcript the
 * user's turn) and answered in speech; a chat completion's input_audio part is heard the same way.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../src/media/wav.ts';
import { speechProblems, speechStats } from '../helpers/speechStats.ts';
import { concatPcm, quiet, speak } from '../helpers/speech.ts';
import { decodeAudioDeltas, RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const QUESTION = 'What is the capital of France?';
const MAX_TOKENS = 96;
/** Questions a person tries first: short answers expected (within the pipeline's max_tokens, 256). */
const SIMPLE = [
  'What is the capital of France?',
  'What color is the sky on a clear day?',
  'How many days are in a week?',
  'What is the capital of Italy?',
  'What is the opposite of hot?',
  'Name a fruit that is yellow.',
  'What is the capital of Germany?',
  'What is the opposite of day?',
  'Which planet do we live on?',
  'What do you use to write on paper?',
  'What is the capital of Japan?',
  'What is frozen water called?',
  'How many wheels does a bicycle have?',
  'What is the largest ocean on Earth?',
  'What language is spoken in Spain?',
  'How many hours are in a day?',
  'Where does the sun rise?',
  'What is a baby cat called?',
  'What do you call a doctor for teeth?',
  'Say hello in one short sentence.',
];
/** Debian's wamerican list (/usr/share/dict/words), lower-cased. */
const DICTIONARY = '/usr/share/dict/words';

let served: ServedPipeline;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-assistant-'));
  served = await servePipeline('assistant.yaml');
}, 300_000);

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

/** The words of a text, as a dictionary lists them (letters with an inner apostrophe; digits are not words). */
function wordsOf(text: string): string[] {
  return (text.match(/[A-Za-z]+(?:'[A-Za-z]+)*/g) ?? []).map((w) => w.toLowerCase());
}

/** Whether the list has the word, or its stem before a possessive or contraction suffix. */
function known(words: Set<string>, word: string): boolean {
  return words.has(word) || words.has(word.replace(/'(s|t|re|ll|ve|d|m)$/, ''));
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

  it('answers twenty simple questions in English words, each ending on its own', async () => {
    const dictionary = new Set(
      readFileSync(DICTIONARY, 'utf8')
        .split('\n')
        .map((w) => w.trim().toLowerCase()),
    );
    // Eight at a time, as a few users would: the Thinker batches them (its max_num_seqs, so none waits on a slot:
    // admission under overload is test/e2e/admission*'s subject). Greedy answers are the same at any width, and the
    // longest answer sets the case's time: four questions whose answers ran 154-222 tokens (moo, the season after
    // winter, two plus two, a spider's legs: half of the 1,348 tokens) gave way to four answered in 7 tokens each,
    // the check being the same over any twenty questions (bench/NOTES.md, "Suite time").
    const answers: { question: string; finish_reason: string; content: string }[] = [];
    const queue = [...SIMPLE];
    const ask = async (question: string) => {
      const res = await fetch(`${served.base}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: question }] }),
      });
      const body = await res.text();
      expect(res.status, body).toBe(200);
      const [choice] = (JSON.parse(body) as { choices: { finish_reason: string; message: { content: string } }[] })
        .choices;
      answers.push({ question, finish_reason: choice.finish_reason, content: choice.message.content });
    };
    const worker = async () => {
      for (let q = queue.shift(); q !== undefined; q = queue.shift()) await ask(q);
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    for (const answer of answers) expect(answer.finish_reason, answer.question).toBe('stop');
    const words = answers.flatMap((a) => wordsOf(a.content));
    const unknown = words.filter((w) => !known(dictionary, w));
    expect(words.length).toBeGreaterThan(3 * SIMPLE.length);
    expect(unknown.length / words.length, unknown.join(' ')).toBeLessThanOrEqual(0.1);
  }, 240_000);

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

  it('hears a spoken question (server_vad, Whisper) and answers it in speech', async () => {
    const client = await RealtimeClient.connect(served.wsUrl);
    client.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } },
      },
    });
    await client.next('session.updated');
    const pcm = concatPcm(quiet(400), speak(QUESTION), quiet(1000));
    const chunk = 480; // 20 ms at 24 kHz, at the pace of a microphone
    const start = performance.now();
    for (let i = 0, n = 0; i < pcm.length; i += chunk, n++) {
      const part = pcm.subarray(i, i + chunk);
      client.send({
        type: 'input_audio_buffer.append',
        audio: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
      });
      const due = start + (n + 1) * 20 - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due)); // the pace of speech, not a synchronisation
    }
    const committed = await client.next('input_audio_buffer.committed', () => true, 10_000);
    const heard = await client.next('conversation.item.input_audio_transcription.completed', () => true, 60_000);
    expect(heard.item_id).toBe(committed.item_id);
    expect(heard.transcript).toMatch(/capital of France/i);
    const done = await client.next('response.done', () => true, 120_000);
    const response = done.response as { status: string; output: { content: { transcript?: string }[] }[] };
    expect(response.status).toBe('completed'); // the answer ended on the model's EOS, not at a cap
    const transcript = response.output.flatMap((o) => o.content.map((c) => c.transcript ?? '')).join(' ');
    expect(transcript).toMatch(/Paris/);
    const samples = Float32Array.from(decodeAudioDeltas(client.events), (s) => s / 32768);
    expect(speechProblems(speechStats(samples, 24000), espeakSeconds(transcript)), transcript).toEqual([]);
    // The user's item keeps its audio and now its transcript, as OpenAI shows it.
    client.send({ type: 'conversation.item.retrieve', item_id: committed.item_id });
    const { item } = await client.next('conversation.item.retrieved');
    expect(item).toMatchObject({ content: [{ type: 'input_audio', transcript: heard.transcript }] });
    expect((item as { content: { audio?: string }[] }).content[0].audio?.length).toBeGreaterThan(1000);
    client.close();
  }, 150_000);

  it("hears a chat completion's input_audio part", async () => {
    const wav = join(dir, 'question.wav');
    execFileSync('espeak-ng', ['-w', wav, QUESTION]);
    const res = await fetch(`${served.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        messages: [
          {
            role: 'user',
            content: [
              { type: 'input_audio', input_audio: { data: readFileSync(wav).toString('base64'), format: 'wav' } },
            ],
          },
        ],
        max_tokens: MAX_TOKENS,
      }),
    });
    const body = await res.text();
    expect(res.status, body).toBe(200);
    const json = JSON.parse(body) as { choices: { finish_reason: string; message: { content: string } }[] };
    expect(json.choices[0].finish_reason).toBe('stop');
    expect(json.choices[0].message.content).toMatch(/Paris/);
  }, 60_000);
});
