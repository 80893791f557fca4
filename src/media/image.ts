/**
 * PNG and JPEG bytes -> 8-bit RGB pixels, with pure-JS decoders (pngjs, jpeg-js) that install offline.
 * The format is sniffed from the magic bytes, not trusted from a data URL's media type. Dimensions are
 * checked from the header before decoding so a small file that claims a huge image (a decompression bomb)
 * is refused without allocating it.
 *
 * Transparency is composited over white: the colour of a fully transparent pixel is arbitrary (often black)
 * and dropping alpha would make invisible content visible to the encoder.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { mediaInvalid } from './mediaError.ts';

export interface RgbImage {
  readonly width: number;
  readonly height: number;
  /** [height][width][3], 8-bit RGB. */
  readonly data: Uint8Array;
}

export type ImageFormat = 'png' | 'jpeg';

/** Decoded images larger than this are refused (~40 megapixels: 120 MB as RGB, 160 MB as RGBA). */
export const MAX_DECODED_PIXELS = 40_000_000;

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function sniffImageFormat(bytes: Uint8Array): ImageFormat | null {
  if (bytes.length >= 8 && PNG_MAGIC.every((b, i) => bytes[i] === b)) return 'png';
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  return null;
}

function checkPixels(width: number, height: number, what: string): void {
  if (width < 1 || height < 1) throw mediaInvalid(what, `image is ${width}x${height}`);
  if (width * height > MAX_DECODED_PIXELS) {
    throw mediaInvalid(
      what,
      `image is ${width}x${height} (${((width * height) / 1e6).toFixed(1)} MP); the limit is ` +
        `${MAX_DECODED_PIXELS / 1e6} MP`,
    );
  }
}

function rgbaToRgb(rgba: Uint8Array, width: number, height: number): Uint8Array {
  const out = new Uint8Array(width * height * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) {
    const a = rgba[i + 3];
    if (a === 255) {
      out[j] = rgba[i];
      out[j + 1] = rgba[i + 1];
      out[j + 2] = rgba[i + 2];
    } else {
      // over white: c * a + 255 * (1 - a), rounded
      for (let c = 0; c < 3; c++) out[j + c] = Math.round((rgba[i + c] * a + 255 * (255 - a)) / 255);
    }
  }
  return out;
}

/** Width and height from a JPEG's start-of-frame segment, walking the marker segments before it. */
function jpegSize(bytes: Uint8Array, what: string): { width: number; height: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 2; // after SOI
  while (at + 4 <= bytes.length) {
    if (bytes[at] !== 0xff) throw mediaInvalid(what, `JPEG has no marker at byte ${at}`);
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at++; // fill byte
      continue;
    }
    const length = view.getUint16(at + 2);
    // SOF0..SOF15 carry the size, except DHT (C4), JPG (C8) and DAC (CC), which share the range.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (at + 9 > bytes.length) break;
      return { height: view.getUint16(at + 5), width: view.getUint16(at + 7) };
    }
    if (marker === 0xd9 || marker === 0xda) break; // end of image / start of scan before any frame header
    at += 2 + length;
  }
  throw mediaInvalid(what, 'JPEG has no frame header (SOF) before its image data');
}

/**
 * The pixel size from the header alone (PNG IHDR, JPEG SOF), for counting an image's embeddings
 * (imageEmbeddingCount) without decoding it. decodeImage checks the same limits.
 */
export function probeImageSize(
  bytes: Uint8Array,
  what = 'image',
): { readonly format: ImageFormat; readonly width: number; readonly height: number } {
  const format = sniffImageFormat(bytes);
  if (format === 'png') {
    // IHDR is always the first chunk: width and height at bytes 16..24, big-endian.
    if (bytes.length < 24) throw mediaInvalid(what, 'PNG is truncated before its header');
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const size = { format, width: view.getUint32(16), height: view.getUint32(20) };
    checkPixels(size.width, size.height, what);
    return size;
  }
  if (format === 'jpeg') {
    const size = { format, ...jpegSize(bytes, what) };
    checkPixels(size.width, size.height, what);
    return size;
  }
  throw mediaInvalid(what, 'not a PNG or JPEG image (unrecognised leading bytes)');
}

function decodePng(bytes: Uint8Array, what: string): RgbImage {
  probeImageSize(bytes, what); // refuses a decompression bomb before pngjs allocates it
  let png: { width: number; height: number; data: Uint8Array };
  try {
    png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  } catch (err) {
    throw mediaInvalid(what, `cannot decode PNG: ${(err as Error).message}`, err);
  }
  return { width: png.width, height: png.height, data: rgbaToRgb(png.data, png.width, png.height) };
}

function decodeJpeg(bytes: Uint8Array, what: string): RgbImage {
  probeImageSize(bytes, what);
  let img: { width: number; height: number; data: Uint8Array };
  try {
    img = jpeg.decode(bytes, {
      useTArray: true,
      formatAsRGBA: true,
      maxResolutionInMP: MAX_DECODED_PIXELS / 1e6,
      maxMemoryUsageInMB: 512,
    });
  } catch (err) {
    throw mediaInvalid(what, `cannot decode JPEG: ${(err as Error).message}`, err);
  }
  checkPixels(img.width, img.height, what);
  return { width: img.width, height: img.height, data: rgbaToRgb(img.data, img.width, img.height) };
}

export function decodeImage(bytes: Uint8Array, what = 'image'): RgbImage {
  const format = sniffImageFormat(bytes);
  if (format === 'png') return decodePng(bytes, what);
  if (format === 'jpeg') return decodeJpeg(bytes, what);
  throw mediaInvalid(what, 'not a PNG or JPEG image (unrecognised leading bytes)');
}
