/**
 * Media inputs for benches and tests: 16-bit mono WAV and raw pcm16 of a tone or chirp, PNG of a seeded pattern, a
 * decoded clip's frames (test/helpers/media.ts adds its JPEG).
 */
import { PNG } from 'pngjs';
import type { ContentPart } from '../src/index.ts';

/** A chirp from 200 Hz upward, at `amplitude` of full scale; `seed` shifts the phase so clips differ. */
function chirp(numSamples: number, rateHz: number, seed: number, amplitude: number): Int16Array {
  const out = new Int16Array(numSamples);
  for (let i = 0; i < numSamples; i++) {
    const t = i / rateHz;
    out[i] = Math.round(amplitude * 32767 * Math.sin(2 * Math.PI * (200 + 40 * seed + 300 * t) * t + seed));
  }
  return out;
}

/** Little-endian pcm16 bytes (the Realtime API's input_audio_buffer format). */
export function pcm16Bytes(seconds: number, rateHz = 24000, seed = 1, amplitude = 0.25): Uint8Array {
  const samples = chirp(Math.round(seconds * rateHz), rateHz, seed, amplitude);
  return new Uint8Array(samples.buffer);
}

/** A canonical 44-byte-header 16-bit mono WAV; declaredDataBytes lets a test lie about the data size. */
export function wavBytes(seconds: number, rateHz = 24000, seed = 1, declaredDataBytes?: number): Uint8Array {
  const pcm = pcm16Bytes(seconds, rateHz, seed);
  const view = new DataView(new ArrayBuffer(44 + pcm.length));
  const text = (at: number, s: string) => [...s].forEach((c, i) => view.setUint8(at + i, c.charCodeAt(0)));
  text(0, 'RIFF');
  view.setUint32(4, 36 + pcm.length, true);
  text(8, 'WAVEfmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, rateHz, true);
  view.setUint32(28, 2 * rateHz, true);
  view.setUint16(32, 2, true);
  view.setUint16(34, 16, true);
  text(36, 'data');
  view.setUint32(40, declaredDataBytes ?? pcm.length, true);
  const out = new Uint8Array(view.buffer);
  out.set(pcm, 44);
  return out;
}

/** RGBA pixels of a seeded pattern. */
export function pattern(width: number, height: number, seed: number): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = 4 * (y * width + x);
      data[i] = (x * (3 + seed) + y * seed * 7) % 256;
      data[i + 1] = (y * (5 + seed) + x * 11) % 256;
      data[i + 2] = ((x ^ y) * (seed + 1)) % 256;
      data[i + 3] = 255;
    }
  }
  return data;
}

export function pngBytes(width: number, height: number, seed = 1): Uint8Array {
  const png = new PNG({ width, height });
  pattern(width, height, seed).copy(png.data);
  return new Uint8Array(PNG.sync.write(png));
}

/**
 * The frame main samples a 4:3 clip to under the default encoder.video.frame_pixels (224 x 224): about that area, the
 * aspect kept, both sides floored to 28 (src/media/video/videoGrid.ts scaleFilter).
 */
export const CLIP_FRAME = { width: 252, height: 168 } as const;

/**
 * A clip as main hands it to the engine once decoded: `numFrames` seeded RGB frames of `frame` at 2 fps, its source key
 * `sourceKey` (what the encoder-output store keys it by: the same key, the same bytes).
 */
export function decodedClip(
  numFrames: number,
  sourceKey: string,
  seed = 1,
  frame: { readonly width: number; readonly height: number } = CLIP_FRAME,
): Extract<ContentPart, { type: 'video' }> {
  const { width, height } = frame;
  const frameBytes = width * height * 3;
  const data = new Uint8Array(numFrames * frameBytes);
  for (let f = 0; f < numFrames; f++)
    for (let i = 0; i < frameBytes; i++) data[f * frameBytes + i] = (i * (seed + 3) + f * 17) % 256;
  return { type: 'video', data, numFrames, width, height, fps: 2, sourceKey };
}
