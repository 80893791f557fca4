/**
 * Encoder benchmark: vision ms per image for N images in one batch vs N single runs; audio encoder ms per
 * second of audio at several clip lengths; and the CPU front ends (WAV decode + resample + log-mel, PNG
 * decode + resize + patches), which run before the encoder. Model compute only: no transport, no cache.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEncoderRunner } from '../../stages/encoder/createEncoderRunner.ts';
import { audioFeatures, decodeAudio } from '../../src/media/audio.ts';
import { decodeImage } from '../../src/media/image.ts';
import { imagePatches } from '../../src/media/imagePatches.ts';
import type { EncoderInput } from '../../src/media/types.ts';
import { audioEncoderSpec, visionEncoderSpec } from '../../stages/encoder/ensureEncoderModel.ts';
import { presets } from '../../stages/generator/presets.ts';
import { timed, gitSha } from '../common.ts';
// Synthetic media, the same fixtures the tests use.
import { pngBytes, wavBytes } from '../mediaSamples.ts';

export interface EncoderBenchOptions {
  readonly preset?: string;
  readonly threads?: number;
  readonly images?: number;
  /** Side of the square test images in pixels (default 224: 64 rows each). */
  readonly imageSize?: number;
  readonly repeats?: number;
}

export interface Stats {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
}

export interface EncoderBenchResult {
  readonly machine: {
    readonly cpu: string;
    readonly cores: number;
    readonly node: string;
    readonly gitSha: string;
    readonly date: string;
  };
  readonly preset: string;
  readonly threads: number;
  readonly outputSize: number;
  readonly vision: {
    readonly images: number;
    readonly imageSize: number;
    readonly rowsPerImage: number;
    /** ms per image when all images run as one batch. */
    readonly batchedMsPerImage: Stats;
    /** ms per image when each runs alone. */
    readonly singleMsPerImage: Stats;
  };
  /** Encoder ms per second of audio, by clip length in seconds. */
  readonly audio: readonly { readonly seconds: number; readonly rows: number; readonly msPerSecond: Stats }[];
  readonly frontEnd: {
    /** 24 kHz pcm16 WAV -> 16 kHz samples -> log-mel, ms per second of audio (30 s clip). */
    readonly audioMsPerSecond: Stats;
    /** 640x480 PNG -> decode -> resize -> normalised patches, ms per image. */
    readonly imageMs: Stats;
  };
}

function stats(samples: readonly number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, p50: at(0.5), p90: at(0.9) };
}

/** A 24 kHz 16-bit mono WAV of a chirp. */

export async function runEncoderBench(options: EncoderBenchOptions = {}): Promise<EncoderBenchResult> {
  const preset = options.preset ?? 'tiny';
  const threads = options.threads ?? 1;
  const numImages = options.images ?? 8;
  const imageSize = options.imageSize ?? 224;
  const repeats = options.repeats ?? 5;
  const family = presets[preset];
  if (!family) throw new Error(`unknown preset ${preset} (${Object.keys(presets).join(', ')})`);
  const outputSize = family.thinker.hiddenSize;
  const dir = mkdtempSync(join(tmpdir(), 'chorus-encoder-bench-'));
  try {
    const engine = { threads };
    const vision = await createEncoderRunner(visionEncoderSpec(preset, outputSize, 1), dir, { engine });
    const audio = await createEncoderRunner(audioEncoderSpec(preset, outputSize, 1), dir, { engine });

    const images: EncoderInput[] = Array.from({ length: numImages }, (_, i) =>
      imagePatches(decodeImage(pngBytes(imageSize, imageSize, i + 1))),
    );
    vision.encode(images); // warm the batch shape
    const batched: number[] = [];
    const single: number[] = [];
    for (let r = 0; r < repeats; r++) {
      batched.push(timed(() => vision.encode(images)) / numImages);
      single.push(timed(() => images.forEach((img) => vision.encode([img]))) / numImages);
    }

    const audioFigures = [];
    for (const seconds of [1, 10, 30]) {
      const clip = audioFeatures(decodeAudio(wavBytes(seconds), 'wav'));
      audio.encode([clip]);
      const perSecond = Array.from({ length: repeats }, () => timed(() => audio.encode([clip])) / seconds);
      audioFigures.push({ seconds, rows: clip.numEmbeddings, msPerSecond: stats(perSecond) });
    }

    const wav = wavBytes(30);
    const png = pngBytes(640, 480, 3);
    const audioFront = Array.from({ length: repeats }, () => timed(() => audioFeatures(decodeAudio(wav, 'wav'))) / 30);
    const imageFront = Array.from({ length: repeats }, () => timed(() => imagePatches(decodeImage(png))));
    await vision.close();
    await audio.close();
    const cpu = cpus();
    return {
      machine: {
        cpu: cpu[0]?.model ?? 'unknown',
        cores: cpu.length,
        node: process.version,
        gitSha: gitSha(),
        date: new Date().toISOString(),
      },
      preset,
      threads,
      outputSize,
      vision: {
        images: numImages,
        imageSize,
        rowsPerImage: images[0].numEmbeddings,
        batchedMsPerImage: stats(batched),
        singleMsPerImage: stats(single),
      },
      audio: audioFigures,
      frontEnd: { audioMsPerSecond: stats(audioFront), imageMs: stats(imageFront) },
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (s: Stats) => `${s.p50.toFixed(2)} ms (p90 ${s.p90.toFixed(2)})`;

export function formatEncoderBench(r: EncoderBenchResult): string {
  const lines = [
    `encoders, preset ${r.preset} (output ${r.outputSize}), ${r.threads} thread(s) — ${r.machine.cpu}, ` +
      `${r.machine.cores} cores, node ${r.machine.node}, git ${r.machine.gitSha}, ${r.machine.date}`,
    `vision: ${r.vision.images} images of ${r.vision.imageSize}x${r.vision.imageSize} (${r.vision.rowsPerImage} ` +
      `rows each)`,
    `  one batch of ${r.vision.images}: ${ms(r.vision.batchedMsPerImage)} per image`,
    `  ${r.vision.images} single runs:  ${ms(r.vision.singleMsPerImage)} per image`,
    `  batch speed-up: ${(r.vision.singleMsPerImage.p50 / r.vision.batchedMsPerImage.p50).toFixed(2)}x`,
    'audio encoder, ms per second of audio:',
    ...r.audio.map((a) => `  ${String(a.seconds).padStart(2)} s clip (${a.rows} rows): ${ms(a.msPerSecond)}`),
    'front ends (CPU, before the encoder):',
    `  audio (30 s 24 kHz WAV -> 16 kHz -> log-mel): ${ms(r.frontEnd.audioMsPerSecond)} per second of audio`,
    `  image (640x480 PNG -> 224x168 patches):       ${ms(r.frontEnd.imageMs)} per image`,
  ];
  return lines.join('\n');
}
