/**
 * 64 Realtime sessions at real-time pace (20 ms of audio every 20 ms each) on one VadService: every session gets its
 * turns and the server thread's event loop never stalls (the model runs in the worker). How responsive it stays is
 * printed, not asserted: a speed goal (bench/README.md, "VAD event loop p99 with 64 sessions").
 */
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { expect, it } from 'vitest';
import { DEFAULT_TURN_PARAMS, type TurnEvent } from '../../src/voice/VadService.ts';
import { concat, espeak, frames, percentile, silence, toPcm16, windowsFor, vadForFile } from './speech.ts';

const SESSIONS = 64;
const FRAME_MS = 20;
/** A stall: the loop blocked long enough to back every session's audio up (speed is the bench's goal, not this). */
const STALL_MS = 1000;

const { vad, counter } = vadForFile();

it(`${SESSIONS} real-time sessions: each gets its turns, the loop never stalls (delays printed)`, async () => {
  const speech = espeak('hello, how are you today');
  // Two turns per session, 6 s of audio; each session's speech starts at a different point of the 20 ms grid.
  const audio = Array.from({ length: SESSIONS }, (_, i) => {
    const { samples } = concat(silence(300 + (i % 10) * 37), speech.samples, silence(1200), speech.samples);
    const padded = concat(samples, silence(6000 - samples.length / 24)).samples;
    return frames(toPcm16(padded));
  });
  const numFrames = audio[0].length;
  const events = audio.map(() => [] as TurnEvent[]);
  const streams = audio.map((_, i) => vad().open(DEFAULT_TURN_PARAMS, (e) => isTentative(e) || events[i].push(e)));
  const target = counter().windows + SESSIONS * windowsFor(numFrames * 480);

  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  loopDelay.enable();
  // Each session is its own 20 ms timer, started at its own phase of the period, as independent clients are.
  await Promise.all(
    streams.map(
      (stream, i) =>
        new Promise<void>((done) => {
          setTimeout(() => {
            let next = 0;
            const timer = setInterval(() => {
              stream.push(audio[i][next++]);
              if (next < numFrames) return;
              clearInterval(timer);
              done();
            }, FRAME_MS);
          }, i % FRAME_MS);
        }),
    ),
  );
  await counter().until(target);
  loopDelay.disable();

  const p99Ms = loopDelay.percentile(99) / 1e6;
  const runs = counter().runs.reduce((n, r) => n + r.runs, 0);
  const runMs = counter().runs.reduce((n, r) => n + r.runMs, 0);
  console.log(
    `VAD ${SESSIONS} sessions: event-loop delay p50 ${(loopDelay.percentile(50) / 1e6).toFixed(2)} ms, ` +
      `p99 ${p99Ms.toFixed(2)} ms, max ${(loopDelay.max / 1e6).toFixed(2)} ms; ` +
      `window latency (flush -> probabilities back) p50 ${percentile(counter().latenciesMs, 50).toFixed(2)} ms, ` +
      `p99 ${percentile(counter().latenciesMs, 99).toFixed(2)} ms; ` +
      `${counter().windows} windows in ${runs} model runs (${(counter().windows / runs).toFixed(1)} per run), ` +
      `model ${((1000 * runMs) / counter().windows).toFixed(1)} us per window`,
  );
  expect(loopDelay.max / 1e6).toBeLessThan(STALL_MS);
  for (const [i, got] of events.entries()) {
    expect(
      got.map((e) => e.type),
      `session ${i}`,
    ).toEqual(['speech_started', 'speech_stopped', 'speech_started', 'speech_stopped']);
  }
  for (const stream of streams) stream.close();
  expect(vad().streams).toBe(0);
});
