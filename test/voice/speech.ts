/** Test audio for the VAD: real speech from espeak-ng at the Realtime input rate, silence, low noise, pcm16. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { resample } from '../../src/media/resample.ts';
import { decodeWav } from '../../src/media/wav.ts';
import { afterAll, beforeAll } from 'vitest';
import { StreamingResampler } from '../../src/voice/StreamingResampler.ts';
import { VadService } from '../../src/voice/VadService.ts';
import { tempDir } from '../helpers/tempDir.ts';

export const RATE_HZ = 24000;
export const CHUNK_SAMPLES = 480; // 20 ms at 24 kHz, a typical client frame

/** Speech above this (|x| of full scale) counts as where the speech really is: ~-40 dBFS, above espeak's tails. */
const SPEECH_LEVEL = 0.01;

export interface Speech {
  /** 24 kHz mono, trimmed to the speech itself (first to last sample above SPEECH_LEVEL). */
  readonly samples: Float32Array;
  readonly durationMs: number;
}

const cache = new Map<string, Speech>();

/** espeak-ng says `text` (a 22.05 kHz WAV in a per-test temp dir), decoded, resampled to 24 kHz and trimmed. */
export function espeak(text: string): Speech {
  const cached = cache.get(text);
  if (cached) return cached;
  const wavPath = join(tempDir('vad-speech'), 'speech.wav');
  execFileSync('espeak-ng', ['-w', wavPath, text]);
  const wav = decodeWav(readFileSync(wavPath), wavPath);
  const samples24k = resample(wav.samples, wav.sampleRateHz, RATE_HZ);
  let first = -1;
  let last = -1;
  for (let i = 0; i < samples24k.length; i++) {
    if (Math.abs(samples24k[i]) < SPEECH_LEVEL) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) throw new Error(`espeak-ng produced no audible speech for "${text}"`);
  const samples = samples24k.slice(first, last + 1);
  const speech = { samples, durationMs: (samples.length * 1000) / RATE_HZ };
  cache.set(text, speech);
  return speech;
}

export function silence(ms: number): Float32Array {
  return new Float32Array(Math.round((ms * RATE_HZ) / 1000));
}

/** Gaussian white noise at `dbfs` RMS (relative to a full-scale sine's peak of 1), from a seeded generator. */
export function noise(ms: number, dbfs: number, seed = 1): Float32Array {
  const out = silence(ms);
  const rms = 10 ** (dbfs / 20);
  let state = seed >>> 0 || 1;
  const uniform = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 4294967296;
  };
  for (let i = 0; i < out.length; i++) {
    out[i] = rms * Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  }
  return out;
}

/** Pieces one after another; returns the signal and where each piece starts, in ms. */
export function concat(...pieces: Float32Array[]): { samples: Float32Array; startsMs: number[] } {
  const samples = new Float32Array(pieces.reduce((n, p) => n + p.length, 0));
  const startsMs: number[] = [];
  let at = 0;
  for (const piece of pieces) {
    startsMs.push((at * 1000) / RATE_HZ);
    samples.set(piece, at);
    at += piece.length;
  }
  return { samples, startsMs };
}

/** Adds `b` into `a` (same length or shorter), in place; returns a. */
export function mix(a: Float32Array, b: Float32Array): Float32Array {
  for (let i = 0; i < b.length; i++) a[i] += b[i];
  return a;
}

export function toPcm16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768)));
  return out;
}

/** Splits pcm into 20 ms client frames (the last may be shorter). */
export function frames(pcm: Int16Array, chunkSamples = CHUNK_SAMPLES): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0; at < pcm.length; at += chunkSamples) out.push(pcm.subarray(at, at + chunkSamples));
  return out;
}

/** Whole 32 ms windows the VAD cuts from `numSamples` of 24 kHz input (what it can analyse, lookahead included). */
export function windowsFor(numSamples: number): number {
  return Math.floor(new StreamingResampler(RATE_HZ, 16000).push(new Float32Array(numSamples)).length / 512);
}

/**
 * Counts windows analysed, across all streams, from the `chorus:vad:windows` diagnostics channel: the way a test
 * knows the VAD has seen all the audio it was given (then "no event" means no event, not "not yet").
 */
export class WindowCounter {
  windows = 0;
  readonly latenciesMs: number[] = [];
  readonly runs: Array<{ windows: number; runs: number; runMs: number }> = [];
  #waiters: Array<{ target: number; resolve: () => void }> = [];
  readonly #listener = (message: unknown) => {
    const m = message as { windows: number; runs: number; runMs: number; latencyMs: number | null };
    this.windows += m.windows;
    if (m.latencyMs !== null) this.latenciesMs.push(m.latencyMs);
    this.runs.push({ windows: m.windows, runs: m.runs, runMs: m.runMs });
    this.#waiters = this.#waiters.filter((w) => (this.windows >= w.target ? (w.resolve(), false) : true));
  };

  constructor() {
    subscribe('chorus:vad:windows', this.#listener);
  }

  until(target: number): Promise<void> {
    if (this.windows >= target) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ target, resolve }));
  }

  close(): void {
    unsubscribe('chorus:vad:windows', this.#listener);
  }
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** A VadService and a WindowCounter for the test file, started before its tests and closed after them. */
export function vadForFile(): { vad(): VadService; counter(): WindowCounter } {
  let vad: VadService;
  let counter: WindowCounter;
  beforeAll(async () => {
    vad = await VadService.start();
    counter = new WindowCounter();
  });
  afterAll(async () => {
    counter?.close();
    await vad?.close();
  });
  return { vad: () => vad, counter: () => counter };
}
