/**
 * A Smart Turn file that does not load, on a real server (configs/tiny-omni.yaml with realtime.semantic_vad.model
 * naming a corrupt file): server_vad sessions keep finding turns; the first session that asks for semantic_vad is
 * told with an error event naming the file and the fix (its turn detection off), and the next one is refused at its
 * session.update. test/voice/vadTurnModelBad.test.ts has the VAD service's side and the silence fallback.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { ofType, sdkSession, tlsPipelineForFile, type Event } from '../helpers/realtimeSdk.ts';
import { concatPcm, quiet, speak } from '../helpers/speech.ts';

const dir = mkdtempSync(join(tmpdir(), 'chorus-bad-smart-turn-'));
const corrupt = join(dir, 'smart-turn-v3.2-cpu.onnx');
writeFileSync(corrupt, 'not an ONNX graph: a download cut short');
const config = join(dir, 'tiny-omni.yaml');
const shipped = readFileSync(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'), 'utf8');
writeFileSync(config, `${shipped}\nrealtime:\n  semantic_vad:\n    model: ${corrupt}\n`);
const pipeline = tlsPipelineForFile(config);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const errorOf = (e: Event) => e.error as { code: string; message: string; param: string | null; event_id?: string };

describe('semantic_vad with a Smart Turn file that does not load', () => {
  it('server_vad keeps working; semantic_vad gets the error naming the file, then a refusal at once', async () => {
    const heard = await sdkSession(pipeline());
    heard.rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        audio: { input: { turn_detection: { type: 'server_vad', create_response: false } } },
      },
    });
    await heard.next(ofType('session.updated'));

    // The first semantic_vad session: accepted (the model loads when its VAD stream opens), then told it failed.
    const first = await sdkSession(pipeline());
    first.rt.send({
      type: 'session.update',
      session: { type: 'realtime', audio: { input: { turn_detection: { type: 'semantic_vad' } } } },
    });
    const failed = errorOf(await first.next(ofType('error')));
    expect(failed.code).toBe(ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE);
    expect(failed.message).toContain(corrupt);
    expect(failed.message).toMatch(/docs\/voice\.md#semantic_vad.*fallback: silence.*server_vad/);

    // server_vad hears a turn after the failed load, on the same VAD workers.
    const speech = concatPcm(quiet(400), speak('Hello there, how are you today?'), quiet(1200));
    for (let at = 0; at < speech.length; at += 2400) {
      const part = speech.subarray(at, at + 2400);
      heard.rt.send({
        type: 'input_audio_buffer.append',
        audio: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
      });
    }
    await heard.next(ofType('input_audio_buffer.speech_started'));
    await heard.next(ofType('input_audio_buffer.speech_stopped'));

    // Known now: the next session asking for it is refused at its session.update, which changes nothing.
    const next = await sdkSession(pipeline());
    next.rt.send({
      type: 'session.update',
      event_id: 'ask_semantic',
      session: { type: 'realtime', audio: { input: { turn_detection: { type: 'semantic_vad' } } } },
    });
    const refused = errorOf(await next.next(ofType('error')));
    expect(refused).toMatchObject({
      code: ErrorCodes.END_OF_TURN_MODEL_UNAVAILABLE,
      param: 'session.audio.input.turn_detection.type',
      event_id: 'ask_semantic',
    });
    expect(next.events.some((e) => e.type === 'session.updated')).toBe(false);
    for (const s of [heard, first, next]) s.rt.close();
  }, 60_000);
});
