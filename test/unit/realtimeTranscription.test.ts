import { describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { InputTranscription } from '../../src/server/realtime/InputTranscription.ts';
import type { ServerEvent } from '../../src/server/realtime/ServerEvent.ts';
import { parseTranscription, transcriptionOfSession } from '../../src/server/realtime/transcriptionSetting.ts';
import type { Transcriber } from '../../src/server/transcription/Transcriber.ts';
import { ClientInputError } from '../../src/server/validate.ts';

const audio = { type: 'audio', data: new Uint8Array(4800), format: 'pcm16', sampleRateHz: 24000 } as const;
const setting = { model: 'gpt-4o-mini-transcribe', language: null, prompt: null };

function paramOf(fn: () => unknown): string | null {
  try {
    fn();
  } catch (err) {
    return (err as ClientInputError).param;
  }
  return null;
}

describe('transcription setting', () => {
  it('reads the GA and the beta placement alike, and null as off', () => {
    const want = { model: 'gpt-4o-mini-transcribe', language: 'en', prompt: null };
    const value = { model: 'gpt-4o-mini-transcribe', language: 'en' };
    expect(transcriptionOfSession({ audio: { input: { transcription: value } } })).toEqual(want);
    expect(transcriptionOfSession({ input_audio_transcription: value })).toEqual(want);
    expect(transcriptionOfSession({ audio: { input: { transcription: null } } })).toBeNull();
    expect(transcriptionOfSession({ audio: { input: {} } })).toBeUndefined();
    expect(parseTranscription({}, 'x')).toEqual({ model: 'whisper-1', language: null, prompt: null });
  });

  it('refuses a bad value naming its field', () => {
    expect(paramOf(() => parseTranscription('whisper-1', 't'))).toBe('t');
    expect(paramOf(() => parseTranscription({ model: 3 }, 't'))).toBe('t.model');
    expect(paramOf(() => parseTranscription({ model: 'm', language: 'english' }, 't'))).toBe('t.language');
    expect(paramOf(() => parseTranscription({ model: 'm', promt: 'x' }, 't'))).toBe('t');
    expect(
      paramOf(() =>
        transcriptionOfSession({ audio: { input: { transcription: { model: 'a' } } }, input_audio_transcription: {} }),
      ),
    ).toBe('session.input_audio_transcription');
  });
});

describe('InputTranscription', () => {
  /** A writer that keeps what is sent; `done` when an item's last event (completed or failed) is out. */
  const collect = () => {
    const events: ServerEvent[] = [];
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const writer = {
      send: (e: ServerEvent) => {
        events.push(e);
        if (e.type.endsWith('.completed') || e.type.endsWith('.failed')) finished();
      },
    };
    return { events, done, writer };
  };

  it('sends each piece as a delta, then the whole transcript and the audio duration', async () => {
    const { events, done, writer } = collect();
    const transcriber: Transcriber = {
      transcribe: async (_a, _s, _signal, onDelta) => {
        onDelta('Hello');
        onDelta(' there.');
        return 'Hello there.';
      },
    };
    new InputTranscription(transcriber, writer).start('item_1', audio, setting, 0.1);
    await done;
    expect(events.map((e) => e.type)).toEqual([
      'conversation.item.input_audio_transcription.delta',
      'conversation.item.input_audio_transcription.delta',
      'conversation.item.input_audio_transcription.completed',
    ]);
    expect(events[2]).toMatchObject({ item_id: 'item_1', transcript: 'Hello there.', usage: { seconds: 0.1 } });
  });

  it('reports a pipeline with no speech-to-text, and a failed model, as .failed with a code', async () => {
    let run = collect();
    new InputTranscription(null, run.writer).start('item_1', audio, setting, 0.1);
    await run.done;
    expect(run.events[0]).toMatchObject({
      type: 'conversation.item.input_audio_transcription.failed',
      error: { code: ErrorCodes.TRANSCRIPTION_UNAVAILABLE },
    });
    run = collect();
    const failing: Transcriber = { transcribe: () => Promise.reject(new Error('onnx run failed')) };
    new InputTranscription(failing, run.writer).start('item_2', audio, setting, 0.1);
    await run.done;
    expect(run.events[0]).toMatchObject({ item_id: 'item_2', error: { code: ErrorCodes.TRANSCRIPTION_FAILED } });
  });

  it('close() aborts what runs and nothing more is sent for it', async () => {
    const { events, writer } = collect();
    let aborted!: Promise<void>;
    const transcriber: Transcriber = {
      transcribe: (_a, _s, signal) => {
        aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve()));
        return aborted.then(() => Promise.reject(new Error('cancelled')));
      },
    };
    const t = new InputTranscription(transcriber, writer);
    t.start('item_1', audio, setting, 0.1);
    t.close();
    await aborted;
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual([]);
  });
});
