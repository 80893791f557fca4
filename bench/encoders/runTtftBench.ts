/**
 * TTFT of text-only requests with and without concurrent audio encoding, through the real runtime (stage
 * processes, shared memory). Unloaded: text requests one after another. Loaded: an audio request (a long clip)
 * goes in, and text requests follow one after another until the audio request's first text arrives; only those
 * that were over by then count, since they ran while its audio was being decoded and encoded.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import type { GenerateRequest, OutputEvent, RequestHandle } from '../../src/common/engine.ts';
// Synthetic media, the same fixtures the tests use.
import { wavBytes } from '../mediaSamples.ts';

export interface TtftBenchOptions {
  readonly config: string;
  /** Replaces the audio encoder's `model: {}` (e.g. "{num_layers: 6}") to make encoding longer or shorter. */
  readonly audioEncoderModel?: string;
  readonly audioSeconds: number;
  readonly rounds: number;
  readonly textRequests: number;
}

export interface Percentiles {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
}

export interface TtftBenchResult {
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly node: string;
    readonly gitSha: string;
    readonly date: string;
  };
  readonly options: TtftBenchOptions;
  readonly unloadedTtftMs: Percentiles;
  readonly loadedTtftMs: Percentiles;
  /** Audio request: admission -> its first text (decode + encode + prefill of the clip), per round. */
  readonly audioFirstTextMs: Percentiles;
}

function percentiles(samples: readonly number[]): Percentiles {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { n: s.length, p50: at(0.5), p90: at(0.9), max: s.at(-1) ?? NaN };
}

function done(handle: RequestHandle): Promise<{ firstTextAtMs: number; doneAtMs: number }> {
  return new Promise((resolve, reject) => {
    let firstTextAtMs = NaN;
    handle.events.subscribe({
      next: (e: OutputEvent) => {
        if (e.type === 'text' && Number.isNaN(firstTextAtMs)) firstTextAtMs = e.atMs;
        if (e.type !== 'done') return;
        if (e.finishReason === 'error') reject(new Error(`${e.error?.code}: ${e.error?.message}`));
        else resolve({ firstTextAtMs, doneAtMs: e.atMs });
      },
    });
  });
}

/** A 16-bit mono 24 kHz WAV of a chirp; `seed` shifts its phase, so every round misses the encoder cache. */

export async function runTtftBench(o: TtftBenchOptions): Promise<TtftBenchResult> {
  let yaml = readFileSync(o.config, 'utf8');
  if (o.audioEncoderModel) {
    const marker = /(stage_id: audio-encoder\n\s+kind: encoder\n\s+model: )\{\}/;
    if (!marker.test(yaml)) throw new Error(`${o.config} has no "stage_id: audio-encoder" with "model: {}" to replace`);
    yaml = yaml.replace(marker, `$1${o.audioEncoderModel}`);
  }
  const engine = await Orchestrator.start(parseConfig(yaml, o.config));
  const text = (i: number): GenerateRequest => ({
    messages: [{ role: 'user', content: `Question ${i}: why is the sky blue?` }],
    modalities: ['text'],
    sampling: { maxTokens: 3, ignoreEos: true },
  });
  const ttft = async (i: number) => {
    const sentAtMs = Date.now();
    const r = await done(engine.generate(text(i)));
    return { ttftMs: r.firstTextAtMs - sentAtMs, doneAtMs: r.doneAtMs };
  };
  try {
    for (let i = 0; i < 3; i++) await ttft(i);
    const unloaded: number[] = [];
    for (let i = 0; i < o.textRequests; i++) unloaded.push((await ttft(i)).ttftMs);
    const loaded: number[] = [];
    const audioFirst: number[] = [];
    for (let round = 0; round < o.rounds; round++) {
      const clip = wavBytes(o.audioSeconds, 24_000, round + 1); // a new clip every round: always a cache miss
      const sentAtMs = Date.now();
      const audio = done(
        engine.generate({
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: `Listen ${round}: ` },
                { type: 'audio', data: clip, format: 'wav' },
              ],
            },
          ],
          modalities: ['text'],
          sampling: { maxTokens: 3, ignoreEos: true },
        }),
      );
      let audioFirstTextAtMs = Number.POSITIVE_INFINITY;
      void audio.then(
        (r) => (audioFirstTextAtMs = r.firstTextAtMs),
        () => {},
      );
      const during: { ttftMs: number; doneAtMs: number }[] = [];
      for (let i = 0; i < o.textRequests && Date.now() < audioFirstTextAtMs; i++) during.push(await ttft(i));
      const a = await audio;
      audioFirst.push(a.firstTextAtMs - sentAtMs);
      for (const d of during) if (d.doneAtMs < a.firstTextAtMs) loaded.push(d.ttftMs);
    }
    const cpu = cpus();
    let gitSha = 'unknown';
    try {
      gitSha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    } catch {
      // not a git checkout: the report says 'unknown'
    }
    return {
      machine: {
        cpu: cpu[0]?.model ?? 'unknown',
        cores: cpu.length,
        node: process.version,
        gitSha,
        date: new Date().toISOString(),
      },
      options: o,
      unloadedTtftMs: percentiles(unloaded),
      loadedTtftMs: percentiles(loaded),
      audioFirstTextMs: percentiles(audioFirst),
    };
  } finally {
    await engine.close();
  }
}

const ms = (p: Percentiles) =>
  `p50 ${p.p50.toFixed(0)} ms, p90 ${p.p90.toFixed(0)} ms, max ${p.max.toFixed(0)} ms (n ${p.n})`;

export function formatTtftBench(r: TtftBenchResult): string {
  return [
    `text TTFT with and without concurrent audio encoding — ${r.machine.cpu}, ${r.machine.cores} cores, node ` +
      `${r.machine.node}, git ${r.machine.gitSha}, ${r.machine.date}`,
    `config ${r.options.config}${encoderNote(r)}, ${r.options.audioSeconds} s clips`,
    `  unloaded:                     ${ms(r.unloadedTtftMs)}`,
    `  while audio is being encoded: ${ms(r.loadedTtftMs)}`,
    `  audio request, first text:    ${ms(r.audioFirstTextMs)}  (decode + encode + prefill of the clip)`,
  ].join('\n');
}

function encoderNote(r: TtftBenchResult): string {
  return r.options.audioEncoderModel ? `, audio encoder model ${r.options.audioEncoderModel}` : '';
}
