/**
 * Image decoding (PNG made with pngjs, JPEG with jpeg-js, here), the patch grid and its embedding count,
 * the resize, CLIP normalisation and patch order, and the errors bad images get.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { decodeImage, probeImageSize, sniffImageFormat, type RgbImage } from '../../src/media/image.ts';
import { prepareImageUrl } from '../../src/media/prepareMedia.ts';
import {
  CLIP_MEAN,
  CLIP_STD,
  DEFAULT_IMAGE_GRID,
  imageEmbeddingCount,
  imageGrid,
  imagePatches,
} from '../../src/media/imagePatches.ts';
import { resizeBilinear } from '../../src/media/resizeBilinear.ts';
import { ErrorCodes } from '../../src/common/errors.ts';

/** RGBA pixels from a function of (x, y). */
function rgba(
  width: number,
  height: number,
  pixel: (x: number, y: number) => [number, number, number, number],
): Buffer {
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(pixel(x, y), (y * width + x) * 4);
  return data;
}

/** colorType 6 = RGBA, 2 = RGB (the same opaque picture in another encoding). */
function pngBytes(
  width: number,
  height: number,
  pixel: (x: number, y: number) => [number, number, number, number],
  colorType: 2 | 6 = 6,
): Uint8Array {
  const png = new PNG({ width, height });
  rgba(width, height, pixel).copy(png.data);
  return new Uint8Array(PNG.sync.write(png, { colorType }));
}

function jpegBytes(
  width: number,
  height: number,
  pixel: (x: number, y: number) => [number, number, number, number],
  quality = 95,
): Uint8Array {
  return new Uint8Array(jpeg.encode({ width, height, data: rgba(width, height, pixel) }, quality).data);
}

function expectMediaError(fn: () => unknown, pattern: RegExp): void {
  expect(fn).toThrowError(pattern);
  try {
    fn();
  } catch (err) {
    expect((err as { code?: string }).code).toBe(ErrorCodes.MEDIA_INVALID);
  }
}

describe('decodeImage', () => {
  it('decodes a PNG exactly and composites transparency over white', () => {
    const bytes = pngBytes(3, 2, (x, y) => (x === 2 ? [0, 0, 0, 0] : [10 * x, 20 * y, 200, 255]));
    expect(sniffImageFormat(bytes)).toBe('png');
    const img = decodeImage(bytes);
    expect([img.width, img.height]).toEqual([3, 2]);
    expect(Array.from(img.data.subarray(0, 6))).toEqual([0, 0, 200, 10, 0, 200]);
    expect(Array.from(img.data.subarray(6, 9))).toEqual([255, 255, 255]); // transparent black -> white
    expect(Array.from(img.data.subarray(9, 12))).toEqual([0, 20, 200]);
  });

  it('decodes a JPEG to within compression error', () => {
    const bytes = jpegBytes(16, 16, () => [200, 100, 50, 255]);
    expect(sniffImageFormat(bytes)).toBe('jpeg');
    const img = decodeImage(bytes);
    expect([img.width, img.height]).toEqual([16, 16]);
    for (let i = 0; i < img.data.length; i += 3) {
      expect(Math.abs(img.data[i] - 200)).toBeLessThanOrEqual(3);
      expect(Math.abs(img.data[i + 1] - 100)).toBeLessThanOrEqual(3);
      expect(Math.abs(img.data[i + 2] - 50)).toBeLessThanOrEqual(3);
    }
  });

  it('names what is wrong with bad images', () => {
    expectMediaError(
      () => decodeImage(new TextEncoder().encode('GIF89a....'), 'messages[0].content[2]'),
      /messages\[0\]\.content\[2\]: not a PNG or JPEG/,
    );
    const png = pngBytes(8, 8, () => [1, 2, 3, 255]);
    expectMediaError(() => decodeImage(png.subarray(0, 40)), /cannot decode PNG/);
    const corrupt = png.slice();
    corrupt.fill(0x41, 40, 60); // garbage over the image data
    expectMediaError(() => decodeImage(corrupt), /cannot decode PNG/);
    const jpg = jpegBytes(64, 64, (x, y) => [x * 4, y * 4, 9, 255]);
    expectMediaError(() => decodeImage(jpg.subarray(0, 30)), /JPEG has no frame header/);
    // truncated scan
    expectMediaError(() => decodeImage(jpg.subarray(0, Math.floor(jpg.length * 0.8))), /cannot decode JPEG/);
    // A header claiming 100000 x 100000 pixels is refused before any allocation.
    const bomb = png.slice();
    new DataView(bomb.buffer).setUint32(16, 100000);
    new DataView(bomb.buffer).setUint32(20, 100000);
    expectMediaError(() => decodeImage(bomb), /limit is 40 MP/);
  });
});

describe('probeImageSize and prepareImageUrl', () => {
  it('reads the size from PNG and JPEG headers, so the embedding count is known before decoding', () => {
    expect(probeImageSize(pngBytes(300, 200, () => [0, 0, 0, 255]))).toEqual({
      format: 'png',
      width: 300,
      height: 200,
    });
    const jpg = jpegBytes(123, 45, () => [9, 9, 9, 255]);
    expect(probeImageSize(jpg)).toEqual({ format: 'jpeg', width: 123, height: 45 });
    expectMediaError(() => probeImageSize(jpg.subarray(0, 4)), /no frame header/);
  });

  it('prepares a data URL image with its embedding count and a content key', () => {
    const bytes = pngBytes(300, 200, (x, y) => [x % 256, y % 256, 0, 255]);
    const url = `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
    const a = prepareImageUrl(url, [], { what: 'messages[0].content[1]' });
    if ('remote' in a) throw new Error('expected a prepared image');
    expect(a.numEmbeddings).toBe(imageEmbeddingCount(300, 200));
    expect(a.patches.numEmbeddings).toBe(a.numEmbeddings);
    // The key is over decoded pixels: re-encoding the same picture gives the same key; another encoder another.
    const reencoded = pngBytes(300, 200, (x, y) => [x % 256, y % 256, 0, 255], 2);
    expect(Buffer.from(reencoded).equals(Buffer.from(bytes))).toBe(false);
    const again = prepareImageUrl(`data:image/png;base64,${Buffer.from(reencoded).toString('base64')}`);
    if ('remote' in again) throw new Error('expected a prepared image');
    expect(again.cacheKey('enc-1')).toBe(a.cacheKey('enc-1'));
    expect(a.cacheKey('enc-2')).not.toBe(a.cacheKey('enc-1'));
    expect(prepareImageUrl('https://cdn.test/x.png', ['https://cdn.test/'])).toEqual({
      remote: new URL('https://cdn.test/x.png'),
    });
    expect(() => prepareImageUrl('data:image/png;base64,AAAA', [], { what: 'messages[0].content[2]' })).toThrow(
      /messages\[0\]\.content\[2\]: not a PNG or JPEG/,
    );
  });
});

describe('imageGrid and imageEmbeddingCount', () => {
  it('keeps the aspect ratio on a 28 px lattice within [minPixels, maxPixels]', () => {
    expect(imageGrid(224, 224)).toEqual({ width: 224, height: 224, gridWidth: 16, gridHeight: 16 });
    expect(imageEmbeddingCount(224, 224)).toBe(64);
    expect(imageEmbeddingCount(4000, 3000)).toBeLessThanOrEqual(64); // shrunk into maxPixels
    const wide = imageGrid(1920, 1080);
    expect(wide.width / wide.height).toBeCloseTo(1920 / 1080, 0);
    expect(wide.width * wide.height).toBeLessThanOrEqual(DEFAULT_IMAGE_GRID.maxPixels);
    expect(imageEmbeddingCount(10, 10)).toBe(4); // grown to minPixels: 56 x 56
    const thin = imageGrid(5000, 30);
    expect(thin.height).toBe(28);
    expect(thin.width * thin.height).toBeLessThanOrEqual(DEFAULT_IMAGE_GRID.maxPixels);
    for (const [w, h] of [
      [300, 200],
      [17, 999],
      [640, 480],
    ] as const) {
      const g = imageGrid(w, h);
      expect(g.width % 28).toBe(0);
      expect(g.height % 28).toBe(0);
      expect(imageEmbeddingCount(w, h)).toBe((g.gridWidth * g.gridHeight) / 4);
    }
    expectMediaError(() => imageGrid(10000, 20), /aspect ratio/);
  });
});

describe('imagePatches', () => {
  it('normalises with CLIP mean/std and orders patches by 2x2 merge groups', () => {
    // Left half red, right half blue: a 56 x 56 image is a 4 x 4 patch grid, 2 x 2 groups.
    const img: RgbImage = { width: 56, height: 56, data: new Uint8Array(56 * 56 * 3) };
    for (let y = 0; y < 56; y++)
      for (let x = 0; x < 56; x++) img.data.set(x < 28 ? [255, 0, 0] : [0, 0, 255], (y * 56 + x) * 3);
    const out = imagePatches(img);
    expect([out.gridHeight, out.gridWidth, out.numPatches, out.numEmbeddings]).toEqual([4, 4, 16, 4]);
    // Patch order: group (0,0) = patches (0,0) (0,1) (1,0) (1,1), then group (0,1) = (0,2) (0,3) (1,2) (1,3) ...
    expect(Array.from(out.positions.subarray(0, 16))).toEqual([0, 0, 0, 1, 1, 0, 1, 1, 0, 2, 0, 3, 1, 2, 1, 3]);
    const patchDim = 3 * 14 * 14;
    const red = [(1 - CLIP_MEAN[0]) / CLIP_STD[0], -CLIP_MEAN[1] / CLIP_STD[1], -CLIP_MEAN[2] / CLIP_STD[2]];
    const blue = [-CLIP_MEAN[0] / CLIP_STD[0], -CLIP_MEAN[1] / CLIP_STD[1], (1 - CLIP_MEAN[2]) / CLIP_STD[2]];
    for (let i = 0; i < out.numPatches; i++) {
      const expected = out.positions[2 * i + 1] < 2 ? red : blue;
      for (let c = 0; c < 3; c++) {
        // Channel-major inside a patch: values [c * 196, (c + 1) * 196) are one channel.
        const values = out.patches.subarray(i * patchDim + c * 196, i * patchDim + (c + 1) * 196);
        for (const v of values) expect(v).toBeCloseTo(expected[c], 4);
      }
    }
  });

  it('resizes bilinearly: constant stays constant, a ramp stays a ramp, shrinking averages', () => {
    const ramp: RgbImage = {
      width: 8,
      height: 1,
      data: Uint8Array.from({ length: 24 }, (_, i) => Math.floor(i / 3) * 10),
    };
    const up = resizeBilinear(ramp, 16, 1);
    for (let x = 2; x < 14; x++) expect(up[(x + 1) * 3] - up[x * 3]).toBeCloseTo(5, 4); // slope halves
    const checker: RgbImage = { width: 64, height: 64, data: new Uint8Array(64 * 64 * 3) };
    for (let i = 0; i < 64 * 64; i++)
      checker.data.fill(((i % 64) + Math.floor(i / 64)) % 2 ? 255 : 0, i * 3, i * 3 + 3);
    const down = resizeBilinear(checker, 8, 8);
    // Antialiased: a 1-pixel checkerboard shrinks to mid grey, not to a sampled black or white.
    for (const v of down) expect(v).toBeCloseTo(127.5, 0);
  });

  it('decoded PNG and JPEG of the same picture give nearly the same patches', () => {
    const pixel = (x: number, y: number): [number, number, number, number] => [(x * 4) % 256, (y * 4) % 256, 128, 255];
    const a = imagePatches(decodeImage(pngBytes(64, 48, pixel)));
    const b = imagePatches(decodeImage(jpegBytes(64, 48, pixel, 100)));
    expect(a.numPatches).toBe(b.numPatches);
    let maxDiff = 0;
    for (let i = 0; i < a.patches.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a.patches[i] - b.patches[i]));
    expect(maxDiff).toBeLessThan(0.2); // JPEG's chroma subsampling error, in normalised units
  });
});
