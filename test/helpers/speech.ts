/** Real speech for voice tests: espeak-ng (Debian) speaks a sentence; returned as pcm16 mono at 24 kHz. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resample } from '../../src/media/resample.ts';
import { decodeWav } from '../../src/media/wav.ts';

export const SPEECH_RATE_HZ = 24_000;

export function speak(text: string): Int16Array {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-speech-'));
  let wav: Buffer;
  try {
    const file = join(dir, 'speech.wav');
    execFileSync('espeak-ng', ['-w', file, text], { stdio: 'ignore' });
    wav = readFileSync(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pcm = decodeWav(wav);
  const at24k = resample(pcm.samples, pcm.sampleRateHz, SPEECH_RATE_HZ);
  return Int16Array.from(at24k, (x) => Math.round(Math.max(-1, Math.min(1, x)) * 32767));
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
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export const msOf = (pcm: Int16Array) => (1000 * pcm.length) / SPEECH_RATE_HZ;
