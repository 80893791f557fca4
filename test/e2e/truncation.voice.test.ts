/**
 * session.truncation in a voice session: espeak-ng speech into tiny-omni (audio encoder, 320-position Thinker) with
 * server_vad answering each turn by itself. Under "auto" the session keeps answering past the limit, and the audio of
 * the items it drops leaves the session's media budget (the server's budget here holds fewer turns than are spoken);
 * under "disabled" the turn past the limit ends with a failed response.done, never a bare error event a client
 * waiting for its answer would not recognise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configWith } from '../helpers/engine.ts';
import { concatPcm, quiet, speak } from '../helpers/speech.ts';
import { RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const MAX_POSITIONS = 320; // ~3 turns of this speech (25 positions a second) and their short answers
const MEDIA_BUDGET_BYTES = 800_000; // ~4 turns of committed speech; 8 are spoken

let served: ServedPipeline | undefined;
let wsUrl: string;
/** One turn as the microphone hears it: a breath, the question, and the silence that ends the turn. */
let turnAudio: Buffer;

beforeAll(async () => {
  served = await servePipeline(
    configWith('tiny-omni.yaml', {
      'model: {} # the preset above': `model: {max_positions: ${MAX_POSITIONS}} # the preset above`,
    }),
    { maxInputAudioBytes: MEDIA_BUDGET_BYTES },
  );
  ({ wsUrl } = served);
  const pcm = concatPcm(quiet(400), speak('Tell me a story about the sea and the ships.'), quiet(1200));
  turnAudio = Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}, 240_000);

afterAll(async () => {
  await served?.close();
});

interface Done {
  status: string;
  status_details: { error?: { type: string; code: string; message: string } } | null;
}

async function voiceSession(truncation: string): Promise<RealtimeClient> {
  const c = await RealtimeClient.connect(wsUrl);
  c.send({
    type: 'session.update',
    session: {
      output_modalities: ['audio'],
      max_output_tokens: 4,
      truncation,
      audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } },
    },
  });
  await c.next('session.updated');
  return c;
}

/** Speaks one turn (appended at once: the VAD reads the audio's own timeline) and waits for its automatic answer. */
async function speakTurn(c: RealtimeClient): Promise<Done> {
  const chunkBytes = 48_000; // 0.5 s a frame
  for (let at = 0; at < turnAudio.length; at += chunkBytes)
    c.send({ type: 'input_audio_buffer.append', audio: turnAudio.subarray(at, at + chunkBytes).toString('base64') });
  await c.next('input_audio_buffer.committed', () => true, 30_000);
  return (await c.next('response.done', () => true, 60_000)).response as Done;
}

describe('session.truncation in a voice session (server_vad)', () => {
  it('auto: every turn is answered past the limit, and dropped audio leaves the media budget', async () => {
    const c = await voiceSession('auto');
    const turns = 8;
    for (let i = 0; i < turns; i++) {
      const done = await speakTurn(c);
      expect(done.status, `turn ${i}: ${JSON.stringify(done.status_details)}`).not.toBe('failed');
    }
    expect(turns * turnAudio.length).toBeGreaterThan(MEDIA_BUDGET_BYTES); // would not fit without the drops
    const deleted = c.ofType('conversation.item.deleted').map((e) => e.item_id);
    const committed = c.ofType('input_audio_buffer.committed').map((e) => e.item_id);
    expect(deleted.length).toBeGreaterThanOrEqual(turns - 4);
    expect(deleted).toContain(committed[0]); // the first spoken turn went, with its audio
    expect(c.ofType('error')).toEqual([]);
    c.close();
  }, 240_000);

  it('disabled: the turn past the limit ends with a failed response.done, not a bare error', async () => {
    const c = await voiceSession('disabled');
    let failed: Done | null = null;
    for (let i = 0; i < 6 && !failed; i++) {
      const done = await speakTurn(c);
      if (done.status === 'failed') failed = done;
    }
    expect(failed).not.toBeNull();
    expect(failed!.status_details!.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    });
    expect(failed!.status_details!.error!.message).toContain(`the thinker's ${MAX_POSITIONS} positions`);
    expect(failed!.status_details!.error!.message).toContain('conversation.item.delete');
    expect(c.ofType('error')).toEqual([]);
    expect(c.ofType('conversation.item.deleted')).toEqual([]);
    c.close();
  }, 240_000);
});
