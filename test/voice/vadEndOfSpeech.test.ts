/**
 * Where the VAD dates the end of speech, on the voice bench's 16 espeak-ng sentences: Silero decides that the speech
 * ended, the signal's activity dates it (TurnDetector + SignalActivity). Each sentence, trimmed to its voiced part
 * as the bench trims it, sits between room noise (-55 dBFS) or digital silence; speech_stopped.audio_end_ms is
 * compared with where the speech really ends. Dated by Silero's probability alone (its fall, minus one window) the
 * ends were off by 24 ms at p50 in room noise, from 60 ms early to 138 ms late (its probability decays over windows
 * after the last phoneme); with the signal's dating, 4 ms at p50 and at most 28 ms (a final plosive's release).
 */
import { describe, expect, it } from 'vitest';
import { VOICE_SENTENCES } from '../../bench/voice/sentences.ts';
import { concatPcm, msOf, quiet, speak, SPEECH_RATE_HZ, trimSilence } from '../../bench/voice/speech.ts';
import { isTentative } from '../../src/voice/TurnDetector.ts';
import { DEFAULT_TURN_PARAMS, type TurnEvent } from '../../src/voice/VadService.ts';
import { frames, percentile, vadForFile, windowsFor } from './speech.ts';

const { vad, counter } = vadForFile();

/** speech_stopped.audio_end_ms minus where the speech ends, for `speech` between `lead` and 900 ms of `room`. */
async function endLagMs(lead: Int16Array, speech: Int16Array, room: Int16Array): Promise<number> {
  const pcm = concatPcm(lead, speech, room);
  const events: TurnEvent[] = [];
  const stream = vad().open(DEFAULT_TURN_PARAMS, (e) => isTentative(e) || events.push(e));
  const target = counter().windows + windowsFor(pcm.length);
  for (const frame of frames(pcm)) stream.push(frame);
  await counter().until(target);
  stream.close();
  const stops = events.filter((e) => e.type === 'speech_stopped');
  expect(stops, 'one turn per sentence').toHaveLength(1);
  return stops[0].audioEndMs - (msOf(lead) + msOf(speech));
}

describe('VadService: where speech_stopped dates the end of speech (espeak-ng sentences)', () => {
  const sentences = VOICE_SENTENCES.map((text) => trimSilence(speak(text)));

  for (const background of ['room noise at -55 dBFS', 'digital silence'] as const) {
    it(`within a few ms of the signal's end (${background})`, async () => {
      const lags: number[] = [];
      for (const [i, speech] of sentences.entries()) {
        const room = (ms: number) =>
          background === 'digital silence' ? new Int16Array((ms * SPEECH_RATE_HZ) / 1000) : quiet(ms, 11 + i);
        lags.push(await endLagMs(room(400), speech, room(900)));
      }
      const abs = lags.map(Math.abs);
      // Early is as bad as late: a turn dated early would cut the user off by that much.
      expect(percentile(abs, 50), `lags ${lags.join(', ')}`).toBeLessThanOrEqual(8);
      expect(Math.max(...abs), `lags ${lags.join(', ')}`).toBeLessThanOrEqual(40);
    });
  }
});
