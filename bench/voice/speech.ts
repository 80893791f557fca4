/**
 * Real speech for voice tests and the voice bench: espeak-ng (Debian) speaks a sentence, returned as pcm16 mono at
 * 24 kHz (the Realtime API's input format). test/helpers/speech.ts re-exports this module, so tests and the bench
 * speak the same way.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { concatArrays, decodeWav, resample } from '../../src/basics.ts';

export const SPEECH_RATE_HZ = 24_000;

/** Writes espeak-ng's WAV of `text` (22.05 kHz) to `file`. */
export function speakToFile(text: string, file: string): void {
  execFileSync('espeak-ng', ['-w', file, text], { stdio: 'ignore' });
}

/** A WAV file (any rate) as pcm16 mono at 24 kHz. */
export function readSpeech(file: string): Int16Array {
  const pcm = decodeWav(readFileSync(file));
  const at24k = resample(pcm.samples, pcm.sampleRateHz, SPEECH_RATE_HZ);
  return Int16Array.from(at24k, (x) => Math.round(Math.max(-1, Math.min(1, x)) * 32767));
}

export function speak(text: string): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-speech-'));
  try {
    const file = join(dir, 'speech.wav');
    speakToFile(text, file);
    return readSpeech(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `ms` of quiet room: low white noise (about -50 dBFS), seeded, so silence is not digital zero. */
export function quiet(ms: number, seed = 1): Int16Array {
  const out = new Int16Array(Math.round((ms * SPEECH_RATE_HZ) / 1000));
  let s = seed;
  for (let i = 0; i < out.length; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out[i] = ((s / 0x7fffffff) * 2 - 1) * 100;
  }
  return out;
}

export function concatPcm(...parts: Int16Array[]): Int16Array {
  return concatArrays(parts, (length) => new Int16Array(length));
}

export const msOf = (pcm: Int16Array) => (1000 * pcm.length) / SPEECH_RATE_HZ;

/**
 * The voiced part of `pcm`: from the first to the last 10 ms window whose peak is over `threshold` (default ~-40
 * dBFS). espeak-ng ends its WAVs with ~300 ms of digital silence; a bench that timed "end of speech" from the end of
 * the file would count that as part of the server's delay.
 */
export function trimSilence(pcm: Int16Array, threshold = 330): Int16Array {
  const windowSamples = SPEECH_RATE_HZ / 100;
  let first = -1;
  let last = -1;
  for (let at = 0; at < pcm.length; at += windowSamples) {
    let peak = 0;
    for (let i = at; i < Math.min(at + windowSamples, pcm.length); i++) peak = Math.max(peak, Math.abs(pcm[i]));
    if (peak <= threshold) continue;
    if (first < 0) first = at;
    last = Math.min(at + windowSamples, pcm.length);
  }
  return first < 0 ? pcm.subarray(0, 0) : pcm.subarray(first, last);
}
