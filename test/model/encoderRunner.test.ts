/**
 * Generated encoders over onnxruntime-node: rows per item as promised by the embedding counts, a batch
 * equals single runs (padding is masked exactly), same input -> same rows, different media -> different
 * rows, and a copied file model loads as bring-your-own with its merge size measured.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEncoderRunner } from '../../stages/encoder/createEncoderRunner.ts';
import { encoderIdentity, type OnnxEncoderRunner } from '../../stages/encoder/EncoderRunner.ts';
import { imageCacheKey } from '../../src/media/mediaKey.ts';
import { audioEmbeddingCount, audioFeatures } from '../../src/media/audio.ts';
import { prepareAudio } from '../../src/media/prepareMedia.ts';
import { AUDIO_ENCODER_WINDOW_FRAMES } from '../../stages/encoder/audioEncoderModel.ts';
import type { RgbImage } from '../../src/media/image.ts';
import { imageEmbeddingCount, imagePatches } from '../../src/media/imagePatches.ts';
import type { ImagePatches } from '../../src/media/types.ts';
import { encoderSpec, ensureEncoderModel } from '../../stages/encoder/ensureEncoderModel.ts';
import { videoPatches } from '../../src/media/video/videoPatches.ts';
import { DEFAULT_VIDEO_GRID } from '../../src/media/video/videoGrid.ts';
import { maxAbsDiff, tempModelsDir } from './helpers.ts';

const D = 64; // the Thinker's hidden size in these tests
const small = { hiddenSize: 64, numLayers: 2, numHeads: 4, intermediateSize: 128 };
const audioSpec = encoderSpec('audio_encoder', 'tiny', D, 7, small);
const visionSpec = encoderSpec('vision_encoder', 'tiny', D, 7, small);

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

/** pcm16 bytes at 24 kHz (what a Realtime client appends) of a chirp with some noise-like texture. */
function pcm16Speechlike(seconds: number): Uint8Array {
  const n = Math.round(seconds * 24000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const t = i / 24000;
    const v = 0.3 * Math.sin(2 * Math.PI * (180 + 60 * Math.sin(3 * t)) * t) + 0.05 * Math.sin(i * 12.9898);
    out[i] = Math.round(v * 32767);
  }
  return new Uint8Array(out.buffer);
}

describe('audio encoder, windowed (speech encoded while it is spoken)', () => {
  const win = AUDIO_ENCODER_WINDOW_FRAMES / 4; // rows per window

  it("a partial clip gives the whole clip's log-mel frames bit for bit, up to the samples it lacks", () => {
    const whole = prepareAudio(pcm16Speechlike(3), 'pcm16').features();
    const part = prepareAudio(pcm16Speechlike(3).subarray(0, 2 * 24000 * 1.7), 'pcm16').features();
    // A frame is final once its 25 ms window (and the resampler's ~1 ms of taps) has arrived: all but the last 3.
    const final = part.numFrames - 3;
    for (let m = 0; m < whole.numMelBins; m++) {
      const a = whole.mel.subarray(m * whole.numFrames, m * whole.numFrames + final);
      const b = part.mel.subarray(m * part.numFrames, m * part.numFrames + final);
      expect(
        Buffer.from(b.buffer, b.byteOffset, b.byteLength).equals(Buffer.from(a.buffer, a.byteOffset, a.byteLength)),
      ).toBe(true);
    }
  });

  it('rows of a window depend on that window only: whole clip = windows encoded apart, within 1e-5', async () => {
    const clip = audioFeatures(chirp(2.3, 300)); // 230 frames: 3 whole windows and a partial one
    // A fresh runner of the same model, so no row comes from the other's window cache.
    const apart = await createEncoderRunner(audioSpec, models.dir);
    try {
      const [whole] = audio.encode([clip]);
      const rows: Float32Array[] = [];
      for (let start = 0; start < clip.numFrames; start += AUDIO_ENCODER_WINDOW_FRAMES) {
        const frames = Math.min(AUDIO_ENCODER_WINDOW_FRAMES, clip.numFrames - start);
        const mel = new Float32Array(clip.numMelBins * frames);
        for (let m = 0; m < clip.numMelBins; m++)
          mel.set(clip.mel.subarray(m * clip.numFrames + start, m * clip.numFrames + start + frames), m * frames);
        const window = { ...clip, mel, numFrames: frames, numEmbeddings: Math.ceil(frames / 4) };
        rows.push(apart.encode([window])[0]);
      }
      const joined = new Float32Array(whole.length);
      let at = 0;
      for (const r of rows) {
        joined.set(r, at);
        at += r.length;
      }
      expect(at).toBe(whole.length);
      expect(maxAbsDiff(whole, joined)).toBeLessThan(1e-5);
      expect(clip.numEmbeddings).toBe(58);
      expect(whole.length).toBe(58 * D);
      expect(win).toBe(16);
    } finally {
      await apart.close();
    }
  });

  it('a growing clip is encoded once per window: earlier windows come back bit for bit from its cache', async () => {
    const runner = await createEncoderRunner(audioSpec, models.dir);
    try {
      const bytes = pcm16Speechlike(3);
      const [early] = runner.encode([prepareAudio(bytes.subarray(0, 2 * 24000 * 1.5), 'pcm16').features()]);
      const before = runner.windowStats!;
      const [whole] = runner.encode([prepareAudio(bytes, 'pcm16').features()]);
      const after = runner.windowStats!;
      // 1.5 s = 150 frames: windows 0 and 1 are whole and final, window 2 (frames 128..149) is not.
      expect(after.windowHits - before.windowHits).toBe(2);
      expect(after.windowsEncoded - before.windowsEncoded).toBe(3); // 300 frames = 5 windows, 2 reused
      const reused = 2 * win * D;
      expect(Buffer.from(whole.buffer, 0, reused * 4).equals(Buffer.from(early.buffer, 0, reused * 4))).toBe(true);
    } finally {
      await runner.close();
    }
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

  it("encodes a clip's temporal groups apart, as Qwen2-VL's tower attends: a group's rows are its own frames'", () => {
    const clip = (side: number, seeds: readonly number[]) =>
      videoPatches(
        {
          data: Uint8Array.from(seeds.flatMap((s) => [...picture(side, side, s).data])),
          numFrames: seeds.length,
          width: side,
          height: side,
        },
        DEFAULT_VIDEO_GRID,
      );
    const [whole, other] = vision.encode([clip(56, [1, 1, 2, 2, 3, 3]), clip(84, [4, 4])]);
    const groups = [1, 2, 3].map((s) => vision.encode([clip(56, [s, s])])[0]);
    expect(whole.length).toBe(3 * groups[0].length);
    groups.forEach((g, i) =>
      expect(maxAbsDiff(whole.subarray(i * g.length, (i + 1) * g.length), g)).toBeLessThan(1e-5),
    );
    expect(maxAbsDiff(other, vision.encode([clip(84, [4, 4])])[0])).toBeLessThan(1e-5); // batched = alone
    // Another last group leaves the groups before it as they were.
    const [changed] = vision.encode([clip(56, [1, 1, 2, 2, 5, 5])]);
    expect(maxAbsDiff(changed.subarray(0, 2 * groups[0].length), whole.subarray(0, 2 * groups[0].length))).toBe(0);
    expect(maxAbsDiff(changed, whole)).toBeGreaterThan(1e-3);
    // An image is a clip of two identical frames (Qwen2.5-VL's rule): the same rows.
    expect(maxAbsDiff(vision.encode([imagePatches(picture(56, 56, 1))])[0], groups[0])).toBeLessThan(1e-5);
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
    expect(vision.identity).toMatch(/^vision_encoder-[0-9a-f]{32}$/);
    expect(audio.identity).not.toBe(vision.identity);
    const reseeded = await createEncoderRunner(encoderSpec('vision_encoder', 'tiny', D, 8, small), models.dir);
    expect(reseeded.identity).not.toBe(vision.identity);
    // Same seed, same model file: the same identity in another process (the EC store is shared by hosts).
    const again2 = await createEncoderRunner(visionSpec, models.dir);
    expect(again2.identity).toBe(vision.identity);
    // Another seed -> another identity -> another content key for the same picture: the store misses, and the
    // rows it would have served differ from what this encoder computes.
    const img = picture(56, 56, 4);
    const key = (id: string) => imageCacheKey(imagePatches(img), id);
    expect(key(reseeded.identity)).not.toBe(key(vision.identity));
    expect(maxAbsDiff(reseeded.encode([imagePatches(img)])[0], vision.encode([imagePatches(img)])[0])).toBeGreaterThan(
      1e-3,
    );
    await Promise.all([reseeded.close(), again2.close()]);
  });

  it('identity covers model bytes, dtype, output width and the preprocessing version', () => {
    const base = { modality: 'image' as const, modelSha256: 'a'.repeat(64), dtype: 'float32', outputSize: 64 };
    const id = encoderIdentity(base);
    expect(encoderIdentity({ ...base })).toBe(id);
    expect(encoderIdentity({ ...base, modelSha256: 'b'.repeat(64) })).not.toBe(id);
    expect(encoderIdentity({ ...base, dtype: 'float16' })).not.toBe(id);
    expect(encoderIdentity({ ...base, outputSize: 128 })).not.toBe(id);
    expect(encoderIdentity({ ...base, modality: 'audio' })).not.toBe(id);
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
