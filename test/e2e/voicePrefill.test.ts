/**
 * Speech prefilled while the user talks, and answered speculatively: a server_vad session streams espeak-ng speech at
 * real-time pace; its answer (started, held, at the first silence, and sent at speech_stopped) must be the one a
 * manual commit of the same audio gets (text identical, audio within one pcm16 step), and most of its prompt must
 * have been computed before the turn ended (usage.input_token_details.cached_tokens, which counts the prompt
 * positions the answer's request found already in the Thinker's KV: prefilled by earlier requests). A held answer
 * the user speaks over is dropped unheard, and the turn's prefill survives it.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import type { StageStats } from '../../src/worker/messages.ts';
import { thinkerStatsOf } from '../../stages/thinker/protocol.ts';
import { serverMetrics } from '../../src/server/metrics/metrics.ts';
import { COMMIT_TAIL_MS } from '../../src/voice/TurnDetector.ts';
import { ofType, sdkSession, tlsPipelineForFile, type Event, type SdkSession } from '../helpers/realtimeSdk.ts';
import { concatPcm, quiet, speak } from '../helpers/speech.ts';
import { trimSilence } from '../../bench/voice/speech.ts';

const pipeline = tlsPipelineForFile('tiny-omni.yaml');

/** Resolves with the first Thinker stats report (every 250 ms) that satisfies `ok`. */
function thinkerStats(ok: (s: StageStats) => boolean): Promise<StageStats> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      const s = m as StageStats & { stageId: string };
      if (s.stageId !== 'thinker' || !ok(s)) return;
      unsubscribe('chorus:stage:stats', on);
      resolve(s);
    };
    subscribe('chorus:stage:stats', on);
  });
}

/** The held-answer counter by result (this process hosts the server). */
async function speculative(): Promise<Record<string, number>> {
  const { values } = await serverMetrics.voiceSpeculativeAnswersTotal.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.result), v.value]));
}

/** Streams `pcm` in 20 ms appends at the pace it is spoken. */
async function speakInto(rt: SdkSession['rt'], pcm: Int16Array): Promise<void> {
  const start = performance.now();
  for (let i = 0, n = 0; i < pcm.length; i += 480, n++) {
    rt.send({ type: 'input_audio_buffer.append', audio: b64(pcm.subarray(i, i + 480)) });
    const due = start + (n + 1) * 20 - performance.now();
    if (due > 0) await new Promise((r) => setTimeout(r, due)); // the pace of speech, not a synchronisation
  }
}

/** Every event of the answer (response.*) comes after speech_stopped: nothing of a held answer leaked before. */
function answeredAfterStop(events: readonly Event[]): void {
  const stopped = events.findIndex(ofType('input_audio_buffer.speech_stopped'));
  const first = events.findIndex((e) => e.type.startsWith('response.'));
  expect(stopped).toBeGreaterThanOrEqual(0);
  expect(first).toBeGreaterThan(stopped);
}

const b64 = (pcm: Int16Array) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength).toString('base64');

interface Answer {
  readonly text: string;
  readonly audio: Int16Array;
  readonly usage: { input_token_details: { cached_tokens: number; audio_tokens: number }; input_tokens: number };
}

function answerOf(events: readonly Event[], done: Event): Answer {
  const id = (done.response as { id: string }).id;
  const mine = events.filter((e) => e.response_id === id);
  const text = mine
    .filter(ofType('response.output_audio_transcript.delta'))
    .map((e) => e.delta as string)
    .join('');
  const bytes = Buffer.concat(
    mine.filter(ofType('response.output_audio.delta')).map((e) => Buffer.from(e.delta as string, 'base64')),
  );
  const audio = new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  return { text, audio, usage: (done.response as { usage: Answer['usage'] }).usage };
}

describe('Realtime voice turns: speech prefilled while the user talks', () => {
  it('gives the answer a manual commit of the same audio gets, with the turn prefilled before it ended', async () => {
    const speech = trimSilence(speak('Hello there. Can you tell me a story about the sea and the ships?'));
    const lead = quiet(400);
    // Longer than silence_duration_ms, appended at once; the committed item keeps the audio up to COMMIT_TAIL_MS
    // past speech_stopped's audio_end_ms.
    const tail = quiet(1500, 7);
    const maxOutputTokens = 8;

    // 1. server_vad: the speech streams in 20 ms appends at the pace it is spoken.
    const vad = await sdkSession(pipeline());
    vad.rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        output_modalities: ['audio'],
        max_output_tokens: maxOutputTokens,
        audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 500 } } },
      },
    });
    await vad.next(ofType('session.updated'));
    const spoken = concatPcm(lead, speech);
    const before = await speculative();
    await speakInto(vad.rt, spoken);
    vad.rt.send({ type: 'input_audio_buffer.append', audio: b64(tail) });
    const vadDone = await vad.next(ofType('response.done'));
    expect(vad.events.filter(ofType('input_audio_buffer.committed'))).toHaveLength(1);
    const incremental = answerOf(vad.events, vadDone);
    vad.rt.close();
    // Answered by the answer held since the turn's last silence began (the pause after "Hello there." started one
    // that was dropped), confirmed, and unseen until speech_stopped.
    const after = await speculative();
    const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    expect(delta('confirmed')).toBe(1);
    expect(delta('started')).toBe(delta('discarded') + 1);
    answeredAfterStop(vad.events);
    const stopped = vad.events.find(ofType('input_audio_buffer.speech_stopped'))!;
    const clipSamples = (((stopped.audio_end_ms as number) + COMMIT_TAIL_MS) * 24000) / 1000;

    // 2. Manual turns: the same audio appended, committed, answered.
    const manual = await sdkSession(pipeline());
    manual.rt.send({
      type: 'session.update',
      session: { type: 'realtime', output_modalities: ['audio'], max_output_tokens: maxOutputTokens },
    });
    await manual.next(ofType('session.updated'));
    const all = concatPcm(spoken, tail).subarray(0, clipSamples);
    for (let i = 0; i < all.length; i += 24000)
      manual.rt.send({ type: 'input_audio_buffer.append', audio: b64(all.subarray(i, i + 24000)) });
    manual.rt.send({ type: 'input_audio_buffer.commit' });
    manual.rt.send({ type: 'response.create' });
    const manualDone = await manual.next(ofType('response.done'));
    const whole = answerOf(manual.events, manualDone);
    manual.rt.close();

    const status = (done: Event) => (done.response as { status: string }).status;
    expect(status(vadDone)).toBe('incomplete'); // max_output_tokens reached, as it is with random weights
    expect(status(manualDone)).toBe(status(vadDone));
    expect(incremental.usage.input_tokens).toBe(whole.usage.input_tokens); // the same prompt
    expect(incremental.text.length).toBeGreaterThan(0);
    expect(incremental.text).toBe(whole.text);
    expect(incremental.audio.length).toBe(whole.audio.length);
    expect(incremental.audio.length).toBeGreaterThan(0);
    let maxDiff = 0;
    for (let i = 0; i < whole.audio.length; i++)
      maxDiff = Math.max(maxDiff, Math.abs(incremental.audio[i] - whole.audio[i]));
    expect(maxDiff).toBeLessThanOrEqual(1);

    // Prefilled while the user spoke: the speech's rows (all but the last window or two, whose audio came with the
    // tail) were in the Thinker's KV when the answer was admitted. The manual answer computed everything itself.
    const audioTokens = incremental.usage.input_token_details.audio_tokens;
    const speechRows = Math.floor((spoken.length / 24000) * 25);
    expect(incremental.usage.input_token_details.cached_tokens).toBeGreaterThan(speechRows - 3 * 16);
    expect(incremental.usage.input_token_details.cached_tokens).toBeLessThan(incremental.usage.input_tokens);
    expect(whole.usage.input_token_details.cached_tokens).toBe(0);
    expect(audioTokens).toBe(whole.usage.input_token_details.audio_tokens);
  }, 90_000);

  it('a held answer the user speaks over is dropped unheard; the turn is answered once, from its prefill', async () => {
    const first = trimSilence(speak('Tell me about the harbour'));
    const second = trimSilence(speak('and the boats that sail from it at night.'));
    const s = await sdkSession(pipeline());
    s.rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        max_output_tokens: 8,
        audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 600 } } },
      },
    });
    await s.next(ofType('session.updated'));
    const before = await speculative();
    // A 300 ms pause: silence the VAD hears (a held answer starts), shorter than silence_duration_ms (one turn).
    await speakInto(s.rt, concatPcm(quiet(300), first, quiet(300, 3), second));
    s.rt.send({ type: 'input_audio_buffer.append', audio: b64(quiet(1500, 9)) });
    const done = await s.next(ofType('response.done'));
    s.rt.close();
    const after = await speculative();
    const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    expect(delta('discarded')).toBeGreaterThanOrEqual(1); // the pause's held answer
    expect(delta('confirmed')).toBe(1);
    expect(delta('started')).toBe(delta('discarded') + 1);
    expect(s.events.filter(ofType('input_audio_buffer.speech_stopped'))).toHaveLength(1);
    expect(s.events.filter(ofType('response.created'))).toHaveLength(1);
    answeredAfterStop(s.events);
    expect((done.response as { status: string }).status).toBe('incomplete');
    // The discarded answer gave back the prefix it took: the answer still starts past the first phrase's rows.
    const usage = (done.response as { usage: Answer['usage'] }).usage;
    const firstRows = Math.floor(((300 + (first.length * 1000) / 24000) / 1000) * 25);
    expect(usage.input_token_details.cached_tokens).toBeGreaterThan(firstRows - 16);
  }, 60_000);

  it('a turn dropped mid-speech (buffer cleared, session closed) frees what was prefilled', async () => {
    const speech = trimSilence(speak('Tell me about the lighthouse keeper and the storm.'));
    const pcm = concatPcm(quiet(300), speech).subarray(0, 24000 * 2); // two seconds in: mid-speech
    for (const drop of ['clear', 'close'] as const) {
      const s = await sdkSession(pipeline());
      s.rt.send({
        type: 'session.update',
        session: { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad' } } } },
      });
      await s.next(ofType('session.updated'));
      // The Thinker's prefix cache holds what earlier tests' sessions without a key (manual commits) left there:
      // this turn's prefill comes on top of that, and must leave it as it was.
      const before = thinkerStatsOf(await thinkerStats((st) => st.running === 0)).prefix!;
      const retained = thinkerStats((st) => (thinkerStatsOf(st).prefix?.retained ?? 0) > before.retained);
      // Cleared: all of it in one append, which the VAD hears as speech only after it: speech_started starts the
      // prefill (no append comes after it to do so). Closed: at the pace it is spoken.
      if (drop === 'clear') s.rt.send({ type: 'input_audio_buffer.append', audio: b64(pcm) });
      else await speakInto(s.rt, pcm);
      await s.next(ofType('input_audio_buffer.speech_started'));
      await retained; // something was prefilled while the user spoke
      const freed = thinkerStats(
        (st) =>
          thinkerStatsOf(st).prefix?.retained === before.retained &&
          thinkerStatsOf(st).prefix?.retainedBytes === before.retainedBytes &&
          st.running === 0,
      );
      if (drop === 'clear') s.rt.send({ type: 'input_audio_buffer.clear' });
      else s.rt.close();
      await freed;
      if (drop === 'clear') {
        expect(s.events.filter(ofType('response.created'))).toHaveLength(0);
        s.rt.close();
      }
    }
  }, 60_000);
});
