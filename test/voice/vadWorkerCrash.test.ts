/** A VAD worker that dies after READY is replaced; its streams move over and keep their turns and timeline. */
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_TURN_PARAMS, VadService, type TurnEvent } from '../../src/voice/VadService.ts';
import { concat, espeak, frames, silence, toPcm16, windowsFor, WindowCounter } from './speech.ts';

let counter: WindowCounter;
beforeAll(() => {
  counter = new WindowCounter();
});
afterAll(() => counter?.close());

it('replaces a crashed worker; the turn in progress ends and the next one is found on the same timeline', async () => {
  await using vad = await VadService.start();
  const speech = espeak('hello, how are you today');
  const events: TurnEvent[] = [];
  const stream = vad.open(DEFAULT_TURN_PARAMS, (e) => isTentative(e) || events.push(e));

  // 1. Speech up to its end, analysed: a turn is in progress.
  const before = concat(silence(500), speech.samples);
  let target = counter.windows + windowsFor(before.samples.length);
  for (const frame of frames(toPcm16(before.samples))) stream.push(frame);
  await counter.until(target);
  expect(events.map((e) => e.type)).toEqual(['speech_started']);

  // 2. The worker crashes (as a bug in it would); wait for the service to see it die.
  const died = new Promise<unknown>((resolve) => {
    const listener = (message: unknown) => {
      unsubscribe('chorus:vad:died', listener);
      resolve(message);
    };
    subscribe('chorus:vad:died', listener);
  });
  vad.crashWorkerForTest(0);
  expect(await died).toMatchObject({ worker: 0, error: { code: 'CHORUS_ERR_STAGE_DIED' } });

  // 3. More audio goes to the replacement: silence ends the first turn, then a second utterance.
  const after = concat(silence(1500), speech.samples, silence(1500));
  target = counter.windows + windowsFor(after.samples.length);
  for (const frame of frames(toPcm16(after.samples))) stream.push(frame);
  await counter.until(target);
  expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped', 'speech_started', 'speech_stopped']);
  const secondSpeechMs = before.samples.length / 24 + after.startsMs[1];
  const second = events[2] as Extract<TurnEvent, { type: 'speech_started' }>;
  expect(Math.abs(second.audioStartMs + DEFAULT_TURN_PARAMS.prefixPaddingMs - secondSpeechMs)).toBeLessThanOrEqual(150);
  expect(vad.streams).toBe(1);
});
