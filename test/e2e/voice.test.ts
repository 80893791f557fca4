/**
 * Voice turns over Realtime, as a user talks: espeak-ng speech streamed at real-time pace by the openai SDK's
 * Realtime client into a real pipeline with an audio encoder, turn_detection server_vad on the Silero model.
 */
import { describe, expect, it } from 'vitest';
import { serverMetrics } from '../../src/server/metrics/metrics.ts';
import { ofType, sdkSession, tlsPipelineForFile } from '../helpers/realtimeSdk.ts';
import { concatPcm, msOf, quiet, speak } from '../helpers/speech.ts';

const pipeline = tlsPipelineForFile('tiny-omni.yaml');

/** A Realtime session through the official SDK with server_vad on, and a microphone-paced audio streamer. */
async function connect(turnDetection: Record<string, unknown>, maxOutputTokens = 6) {
  const session = await sdkSession(pipeline());
  const { rt, next } = session;
  rt.send({
    type: 'session.update',
    session: {
      type: 'realtime',
      output_modalities: ['audio'],
      max_output_tokens: maxOutputTokens,
      audio: { input: { turn_detection: { type: 'server_vad', ...turnDetection } } },
    },
  });
  await next((e) => e.type === 'session.updated');
  /** Streams pcm16 at real-time pace, in 20 ms appends, as a microphone would. */
  const stream = async (pcm: Int16Array) => {
    const chunk = 480; // 20 ms at 24 kHz
    const start = performance.now();
    for (let i = 0, n = 0; i < pcm.length; i += chunk, n++) {
      const part = pcm.subarray(i, i + chunk);
      rt.send({
        type: 'input_audio_buffer.append',
        audio: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
      });
      const due = start + (n + 1) * 20 - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due)); // the pace of speech, not a synchronisation
    }
  };
  return { ...session, stream };
}

describe('Realtime voice turns (server_vad on Silero)', () => {
  // Short (~1 s): every case streams it at the pace it is spoken, six times in all, and what each case asserts (where
  // a turn starts and ends, a pause inside or between turns, speech over an answer) needs an utterance, not a long one.
  const hello = speak('Hello there.');

  it('speech in: speech_started, speech_stopped, committed, and an automatic spoken answer', async () => {
    const { rt, events, next, stream } = await connect({ silence_duration_ms: 500 });
    const lead = quiet(800);
    await stream(concatPcm(lead, hello, quiet(1200)));
    const done = await next(ofType('response.done'));
    const started = events.find(ofType('input_audio_buffer.speech_started'))!;
    const stopped = events.find(ofType('input_audio_buffer.speech_stopped'))!;
    // Detected where the speech is (the lead-in is room noise, not speech), minus the 300 ms prefix padding.
    expect(started.audio_start_ms as number).toBeGreaterThan(msOf(lead) - 300 - 200);
    expect(started.audio_start_ms as number).toBeLessThan(msOf(lead) + 300);
    expect(stopped.audio_end_ms as number).toBeGreaterThan(msOf(lead) + msOf(hello) - 400);
    expect(stopped.item_id).toBe(started.item_id);
    const order = events.map((e) => e.type);
    const at = (t: string) => order.indexOf(t);
    expect(at('input_audio_buffer.speech_started')).toBeLessThan(at('input_audio_buffer.speech_stopped'));
    expect(at('input_audio_buffer.speech_stopped')).toBeLessThan(at('input_audio_buffer.committed'));
    expect(at('input_audio_buffer.committed')).toBeLessThan(at('response.created'));
    expect(events.find(ofType('input_audio_buffer.committed'))!.item_id).toBe(started.item_id);
    expect((done.response as { status: string }).status).not.toBe('failed');
    expect(events.filter(ofType('response.output_audio.delta')).length).toBeGreaterThan(0);
    expect(events.filter(ofType('input_audio_buffer.speech_started'))).toHaveLength(1);
    // The answer's first audio after the turn ended is measured server-side.
    const voiceTtfp = (await serverMetrics.voiceTtfpSeconds.get()).values.find((v) => v.metricName?.endsWith('_count'));
    expect(voiceTtfp?.value).toBeGreaterThanOrEqual(1);
    rt.close();
  }, 60_000);

  it('a pause shorter than silence_duration_ms stays one turn; a longer one makes two', async () => {
    const { rt, events, next, stream } = await connect({ silence_duration_ms: 800, create_response: false });
    const first = concatPcm(quiet(400), hello, quiet(300)); // 300 ms pause < 800 ms
    await stream(concatPcm(first, hello, quiet(1500), hello, quiet(1500)));
    await next((e) => e.type === 'input_audio_buffer.committed' && events.filter(ofType(e.type)).length >= 2);
    const stops = events.filter(ofType('input_audio_buffer.speech_stopped'));
    expect(events.filter(ofType('input_audio_buffer.speech_started'))).toHaveLength(2);
    expect(stops).toHaveLength(2);
    // The first turn ran through the short pause into the second utterance.
    expect(stops[0].audio_end_ms as number).toBeGreaterThan(msOf(first) + msOf(hello) - 400);
    expect(events.filter(ofType('response.created'))).toHaveLength(0); // create_response: false
    rt.close();
  }, 60_000);

  it('barge-in: speech over an answer cancels it (turn_detected) and the new turn is answered', async () => {
    const { rt, events, next, stream, arrivedAt } = await connect({ silence_duration_ms: 500 }, 2000);
    await stream(concatPcm(quiet(300), hello, quiet(700)));
    const created = await next(ofType('response.created'));
    const firstId = (created.response as { id: string }).id;
    await next(ofType('response.output_audio.delta'));
    // The answer in flight keeps its 2000 tokens (a response's cap is fixed when it is created): still being made
    // when it is spoken over (400 were made whole before the speech over it was detected, on a machine three times as
    // fast as the first ones; cancelled, the rest costs nothing). The next turn's answer only has to come, and random
    // weights never say EOS: capped at 6 tokens it is not 2000 tokens of Thinker, Talker and Code2Wav the test does
    // not look at.
    rt.send({ type: 'session.update', session: { type: 'realtime', max_output_tokens: 6 } });
    await next(ofType('session.updated'), events.length);
    const interruptAt = events.length;
    await stream(concatPcm(hello, quiet(1000)));
    const cancelled = await next((e) => e.type === 'response.done', interruptAt);
    expect(cancelled.response).toMatchObject({
      id: firstId,
      status: 'cancelled',
      status_details: { type: 'cancelled', reason: 'turn_detected' },
    });
    // Cancelled within 150 ms of the detection, as the client sees both events.
    const detected = events.slice(interruptAt).find(ofType('input_audio_buffer.speech_started'))!;
    expect(arrivedAt.get(cancelled)! - arrivedAt.get(detected)!).toBeLessThan(150);
    const doneAt = events.indexOf(cancelled);
    expect(events.slice(doneAt).filter((e) => e.type.startsWith('response.output') && e.response_id === firstId))
      .toEqual([]); // prettier-ignore
    const second = await next((e) => e.type === 'response.done' && e !== cancelled, doneAt + 1);
    expect((second.response as { id: string }).id).not.toBe(firstId);
    rt.close();
  }, 90_000);
});
