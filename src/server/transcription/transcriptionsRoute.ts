/**
 * POST /v1/audio/transcriptions, as OpenAI's: a multipart form with `file` (a WAV file here) and `model`, and
 * optionally `language`, `prompt`, `response_format` (json, the default, or text) and `temperature` (0: the
 * pipeline's Whisper decodes greedily). The transcript comes from the pipeline's speech-to-text (the YAML's `asr:`),
 * the one Realtime input transcription uses. Fields OpenAI defines and Chorus does not implement (`stream`,
 * timestamps, other formats) are refused by name, and so is any field no API has.
 */
import multipart from '@fastify/multipart';
import type { FastifyInstance } from 'fastify';
import { ChorusError, ErrorCodes } from '../../common/errors.ts';
import { readWavLayout } from '../../media/wav.ts';
import { ClientInputError } from '../validate.ts';
import { parseTranscription } from '../realtime/transcriptionSetting.ts';
import type { Transcriber } from './Transcriber.ts';

const MAX_FILE_BYTES = 25 << 20; // OpenAI's limit
const TAKEN = ['model', 'language', 'prompt', 'response_format', 'temperature'];
const REFUSED: Record<string, string> = {
  stream: 'streamed transcription is not supported: leave stream out (or false)',
  timestamp_granularities: 'timestamps are not made (the model decodes without them): leave it out',
  'timestamp_granularities[]': 'timestamps are not made (the model decodes without them): leave it out',
  include: 'no optional output can be included (logprobs are not made): leave it out',
  'include[]': 'no optional output can be included (logprobs are not made): leave it out',
  chunking_strategy: 'the audio is transcribed in 30 s windows; chunking_strategy cannot be set: leave it out',
  known_speaker_names: 'diarization is not supported: leave it out',
  known_speaker_references: 'diarization is not supported: leave it out',
};
const UNAVAILABLE =
  'this pipeline has no speech-to-text model: serve a config with an asr section (configs/assistant.yaml)';

interface Form {
  file: Uint8Array | null;
  fields: Record<string, string>;
}

async function readForm(parts: AsyncIterable<{ type: string; fieldname: string }>): Promise<Form> {
  const form: Form = { file: null, fields: {} };
  for await (const part of parts) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file')
        throw new ClientInputError(`${part.fieldname}: only "file" is a file`, part.fieldname);
      form.file = await (part as unknown as { toBuffer(): Promise<Buffer> }).toBuffer();
    } else {
      const value = (part as unknown as { value: unknown }).value;
      form.fields[part.fieldname] = String(value);
    }
  }
  return form;
}

function check(form: Form): { response: 'json' | 'text'; setting: ReturnType<typeof parseTranscription> } {
  for (const name of Object.keys(form.fields)) {
    if (REFUSED[name] && !(name === 'stream' && form.fields[name] === 'false'))
      throw new ClientInputError(`${name}: ${REFUSED[name]}`, name, ErrorCodes.PARAM_UNSUPPORTED);
    if (!REFUSED[name] && !TAKEN.includes(name))
      throw new ClientInputError(
        `${name} is not a field of a transcription request (its fields: file, ${TAKEN.join(', ')})`,
        name,
      );
  }
  if (!form.file) throw new ClientInputError('file is required: the audio to transcribe (a WAV file)', 'file');
  const { model, language, prompt, response_format: format = 'json', temperature } = form.fields;
  if (!model) throw new ClientInputError('model is required (any name: the pipeline has one speech-to-text)', 'model');
  if (format !== 'json' && format !== 'text')
    throw new ClientInputError(
      `response_format ${JSON.stringify(format)} is not supported: send json or text (no timestamps are made)`,
      'response_format',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  if (temperature !== undefined && Number(temperature) !== 0)
    throw new ClientInputError(
      'temperature: the pipeline decodes greedily (temperature 0); leave it out or send 0',
      'temperature',
      ErrorCodes.PARAM_UNSUPPORTED,
    );
  return { response: format, setting: parseTranscription({ model, language, prompt }, 'request') };
}

export function registerTranscriptions(app: FastifyInstance, transcriber: Transcriber | null): void {
  void app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: MAX_FILE_BYTES, files: 1, fields: 16 } });
    scope.post('/v1/audio/transcriptions', async (request, reply) => {
      if (!request.isMultipart())
        throw new ClientInputError('send the audio as multipart/form-data (file, model), as OpenAI takes it');
      const form = await readForm(request.parts());
      const { response, setting } = check(form);
      if (!transcriber) throw new ChorusError(ErrorCodes.TRANSCRIPTION_UNAVAILABLE, UNAVAILABLE);
      const wav = readWavLayout(form.file!, 'file'); // refused here, before the model's queue, if it is no WAV
      const abort = new AbortController();
      // The client went away before its answer: the clip is dropped if it has not started.
      reply.raw.once('close', () => reply.raw.writableFinished || abort.abort());
      const audio = { type: 'audio', data: form.file!, format: 'wav' } as const;
      const text = await transcriber.transcribe(audio, setting!, abort.signal, () => undefined);
      if (response === 'text') return reply.type('text/plain; charset=utf-8').send(text);
      const seconds = Math.round((wav.numFrames / wav.sampleRateHz) * 1000) / 1000;
      return reply.send({ text, usage: { type: 'duration', seconds } });
    });
  });
}
