/**
 * Generated encoders over onnxruntime-node: rows per item as promised by the embedding counts, a batch
 * equals single runs (padding is masked exactly), same input -> same rows, different media -> different
 * rows, and a copied file model loads as bring-your-own with its merge size measured.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEncoderRunner } from '../../stages/encoders/createEncoderRunner.ts';
import type { OnnxEncoderRunner } from '../../stages/encoders/EncoderRunner.ts';
import { audioEmbeddingCount, audioFeatures } from '../../src/media/audio.ts';
import type { RgbImage } from '../../src/media/image.ts';
import { imageEmbeddingCount, imagePatches } from '../../src/media/imagePatches.ts';
import type { ImagePatches } from '../../src/media/types.ts';
import { audioEncoderSpec, ensureEncoderModel, visionEncoderSpec } from '../../stages/models/ensureEncoderModel.ts';
import { maxAbsDiff, tempModelsDir } from './helpers.ts';

const D = 64; // the Thinker's hidden size in these tests
const small = { hiddenSize: 64, numLayers: 2, numHeads: 4, intermediateSize: 128 };
const audioSpec = audioEncoderSpec('tiny', D, 7, small);
const visionSpec = visionEncoderSpec('tiny', D, 7, small);

let models: ReturnType<typeof tempModelsDir>;
let audio: OnnxEncoderRunner;
let vision: OnnxEncoderRunner;

beforeAll(async () => {
  models = tempModelsDir();
  [audio, vision] = await Promise.all([
    createEncoderRunner(audioSpec, models.dir),
    createEncoderRunner(visionSpec, models.dir),
  ]);
});

afterAll(async () => {
  await audio?.close();
  await vision?.close();
  models?.cleanup();
});

function chirp(seconds: number, startHz: number): Float32Array {
  const n = Math.round(seconds * 16000);
  return Float32Array.from(
    { length: n },
    (_, i) => 0.3 * Math.sin(2 * Math.PI * (startHz + (i / n) * 500) * (i / 16000)),
  );
}

function picture(width: number, height: number, seed: number): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i++) data[i] = (i * (seed * 13 + 7) + seed * 31) % 256;
  return { width, height, data };
}

describe('audio encoder', () => {
  it('gives 25 rows per second, and a padded batch equals single runs within 1e-5', () => {
    const clips = [chirp(0.37, 200), chirp(1, 300), chirp(2.03, 440)].map(audioFeatures);
    const batched = audio.encode(clips);
    clips.forEach((clip, i) => {
      expect(batched[i].length).toBe(clip.numEmbeddings * D);
      const [alone] = audio.encode([clip]);
      expect(maxAbsDiff(batched[i], alone)).toBeLessThan(1e-5);
    });
    expect(clips.map((c) => c.numEmbeddings)).toEqual([10, 25, 51]);
    expect(clips[1].numEmbeddings).toBe(audioEmbeddingCount(16000));
    for (const rows of batched) expect(rows.every(Number.isFinite)).toBe(true);
  });

  it('same audio -> the same rows; different audio -> different rows', () => {
    const a = audioFeatures(chirp(1, 300));
    const [first] = audio.encode([a]);
    const [again] = audio.encode([audioFeatures(chirp(1, 300))]);
    expect(again).toEqual(first);
    const [other] = audio.encode([audioFeatures(chirp(1, 900))]);
    expect(maxAbsDiff(first, other)).toBeGreaterThan(1e-2);
  });
});

describe('vision encoder', () => {
  it('rows = imageEmbeddingCount, and a batch of different sizes equals single runs within 1e-5', () => {
    const sizes = [
      [224, 224],
      [300, 120],
      [40, 60],
    ] as const;
    const images = sizes.map(([w, h], i) => imagePatches(picture(w, h, i + 1)));
    const batched = vision.encode(images);
    images.forEach((img, i) => {
      expect(img.numEmbeddings).toBe(imageEmbeddingCount(sizes[i][0], sizes[i][1]));
      expect(batched[i].length).toBe(img.numEmbeddings * D);
      const [alone] = vision.encode([img]);
      expect(maxAbsDiff(batched[i], alone)).toBeLessThan(1e-5);
    });
  });

  it('same image -> the same rows; different images of the same size -> different rows', () => {
    const [a] = vision.encode([imagePatches(picture(112, 112, 1))]);
    const [b] = vision.encode([imagePatches(picture(112, 112, 1))]);
    const [c] = vision.encode([imagePatches(picture(112, 112, 2))]);
    expect(b).toEqual(a);
    expect(maxAbsDiff(a, c)).toBeGreaterThan(1e-2);
  });

  it('refuses items of the other modality or another patch grid', () => {
    expect(() => vision.encode([audioFeatures(chirp(0.1, 300))])).toThrow(/audio item was sent to the image encoder/);
    const img = imagePatches(picture(56, 56, 1));
    const wrong: ImagePatches = { ...img, mergeSize: 1 };
    expect(() => vision.encode([wrong])).toThrow(/do not fit this encoder/);
  });
});

describe('encoder models', () => {
  it('are cached by sizes and seed, with an identity that enters cache keys', async () => {
    const again = await ensureEncoderModel(visionSpec, models.dir);
    expect(again.built).toBe(false);
    expect(vision.identity).toMatch(/^vision_encoder-[0-9a-f]{16}$/);
    expect(audio.identity).not.toBe(vision.identity);
    expect((await createEncoderRunner(visionEncoderSpec('tiny', D, 8, small), models.dir)).identity).not.toBe(
      vision.identity,
    );
  });

  it('load as bring-your-own files, measuring the merge size, with the same rows', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-enc-file-'));
    try {
      const path = join(dir, 'my_vision.onnx');
      copyFileSync((await ensureEncoderModel(visionSpec, models.dir)).files['vision_encoder.onnx'], path);
      const runner = await createEncoderRunner({ source: 'file', path, modality: 'image' }, models.dir);
      expect(runner.visionGrid).toEqual({ patchSize: 14, mergeSize: 2 });
      expect(runner.identity).toMatch(/^file-/);
      const img = imagePatches(picture(84, 56, 3));
      expect(runner.encode([img])).toEqual(vision.encode([img]));
      await runner.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
