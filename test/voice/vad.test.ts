/**
 * Silero VAD through VadService on real speech (espeak-ng): turns where the speech is, none in silence or low
 * noise, pauses inside and between turns. Audio goes in as 20 ms client frames; the test waits for the VAD to
 * have analysed every window (WindowCounter) before it checks that an event did NOT happen.
 */
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TURN_PARAMS, type TurnEvent } from '../../src/voice/VadService.ts';
import { concat, espeak, frames, mix, noise, silence, toPcm16, windowsFor, vadForFile } from './speech.ts';

const TEXT = 'hello, how are you today';
const TOLERANCE_MS = 150;

const { vad, counter } = vadForFile();

/** Pushes `samples` in 20 ms frames on a fresh stream and resolves with its events once every window is analysed. */
async function run(samples: Float32Array, params = DEFAULT_TURN_PARAMS): Promise<TurnEvent[]> {
  const events: TurnEvent[] = [];
  const stream = vad().open(params, (e) => isTentative(e) || events.push(e));
  const target = counter().windows + windowsFor(samples.length);
  for (const frame of frames(toPcm16(samples))) stream.push(frame);
  await counter().until(target);
  stream.close();
  return events;
}

describe('VadService on espeak-ng speech', () => {
  for (const background of ['zeros', 'noise at -50 dBFS'] as const) {
    it(`finds one turn where the speech is (${background} around it)`, async () => {
      const speech = espeak(TEXT);
      const { samples, startsMs } = concat(silence(1000), speech.samples, silence(1500));
      if (background !== 'zeros') mix(samples, noise(samples.length / 24, -50, 7));
      const speechStartMs = startsMs[1];
      const speechEndMs = startsMs[1] + speech.durationMs;

      const events = await run(samples);

      expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped']);
      const [started, stopped] = events as [
        Extract<TurnEvent, { type: 'speech_started' }>,
        Extract<TurnEvent, { type: 'speech_stopped' }>,
      ];
      // audio_start_ms includes the prefix padding, by definition.
      const prefix = DEFAULT_TURN_PARAMS.prefixPaddingMs;
      expect(Math.abs(started.audioStartMs + prefix - speechStartMs)).toBeLessThanOrEqual(TOLERANCE_MS);
      expect(Math.abs(stopped.audioEndMs - speechEndMs)).toBeLessThanOrEqual(TOLERANCE_MS);
    });
  }

  it('finds no speech in 5 s of zeros or of noise at -50 dBFS', async () => {
    expect(await run(silence(5000))).toEqual([]);
    expect(await run(noise(5000, -50, 3))).toEqual([]);
  });

  it('keeps two utterances one turn when the pause is shorter than silence_duration_ms', async () => {
    const speech = espeak(TEXT);
    const { samples } = concat(silence(800), speech.samples, silence(250), speech.samples, silence(1500));
    const events = await run(samples, { ...DEFAULT_TURN_PARAMS, silenceDurationMs: 500 });
    expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped']);
  });

  it('makes two turns when the pause is longer than silence_duration_ms', async () => {
    const speech = espeak(TEXT);
    const { samples, startsMs } = concat(silence(800), speech.samples, silence(1200), speech.samples, silence(1500));
    const events = await run(samples, { ...DEFAULT_TURN_PARAMS, silenceDurationMs: 500 });
    expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_stopped', 'speech_started', 'speech_stopped']);
    const second = events[2] as Extract<TurnEvent, { type: 'speech_started' }>;
    expect(Math.abs(second.audioStartMs + DEFAULT_TURN_PARAMS.prefixPaddingMs - startsMs[3])).toBeLessThanOrEqual(
      TOLERANCE_MS,
    );
  });

  it('reset() drops the turn in progress but keeps the session-wide timeline', async () => {
    const speech = espeak(TEXT);
    const events: TurnEvent[] = [];
    const stream = vad().open(DEFAULT_TURN_PARAMS, (e) => isTentative(e) || events.push(e));
    const push = async (samples: Float32Array) => {
      const target = counter().windows + windowsFor(samples.length);
      for (const frame of frames(toPcm16(samples))) stream.push(frame);
      await counter().until(target);
    };
    const before = concat(silence(600), speech.samples).samples; // ends mid-turn: no silence after the speech yet
    await push(before);
    expect(events.map((e) => e.type)).toEqual(['speech_started']);

    stream.reset(); // e.g. input_audio_buffer.clear: no speech_stopped will come for that turn
    const resetAtMs = before.length / 24;
    // The windows restart at the reset (a new window grid), so time the rest from a fresh count.
    const after = concat(silence(1000), speech.samples, silence(1500));
    await push(after.samples);
    stream.close();
    expect(events.map((e) => e.type)).toEqual(['speech_started', 'speech_started', 'speech_stopped']);
    const second = events[1] as Extract<TurnEvent, { type: 'speech_started' }>;
    const stopped = events[2] as Extract<TurnEvent, { type: 'speech_stopped' }>;
    const speechStartMs = resetAtMs + after.startsMs[1];
    expect(second.audioStartMs).toBeGreaterThanOrEqual(resetAtMs);
    expect(Math.abs(second.audioStartMs + DEFAULT_TURN_PARAMS.prefixPaddingMs - speechStartMs)).toBeLessThanOrEqual(
      TOLERANCE_MS,
    );
    expect(Math.abs(stopped.audioEndMs - (speechStartMs + speech.durationMs))).toBeLessThanOrEqual(TOLERANCE_MS);
  });
});
