/* global Buffer */
// A worker thread that turns a camera frame (JPEG or PNG bytes) into its thumbnail: THUMB_SIDE x THUMB_SIDE luma
// values, each the mean of the pixels in its box. The near-duplicate check (src/server/realtime/CameraFrames.ts)
// compares thumbnails; decoding a frame takes main's loop far too long for that (a 640 x 480 JPEG ~70 ms with the
// pure-JS decoder, measured here under load), so it happens here. Plain JavaScript: Node 20 cannot start a worker
// from a .ts file. The decoders are the ones the image encoder uses (jpeg-js, pngjs), with their size limits.
import { createRequire } from 'node:module';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const jpeg = require('jpeg-js');
const { PNG } = require('pngjs');

const side = workerData.side;
const maxPixels = workerData.maxPixels;

// Below main's threads (Linux keeps a nice value per thread: pid 0 is this thread alone). Not being able to lower it
// costs speed only.
if (workerData.nice > 0) {
  try {
    setPriority(Math.min(19, getPriority() + workerData.nice));
  } catch {
    // keeps main's priority
  }
}

function decode(bytes) {
  const png = bytes[0] === 0x89 && bytes[1] === 0x50 && bytes[2] === 0x4e && bytes[3] === 0x47;
  if (png) {
    const image = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    if (image.width * image.height > maxPixels) throw new Error('too many pixels');
    return image;
  }
  return jpeg.decode(bytes, {
    useTArray: true,
    formatAsRGBA: true,
    maxResolutionInMP: maxPixels / 1e6,
    maxMemoryUsageInMB: 256,
  });
}

/** RGBA pixels -> side x side box means of BT.601 luma (0-255). */
function thumbnail({ width, height, data }) {
  const sums = new Float64Array(side * side);
  const counts = new Uint32Array(side * side);
  for (let y = 0; y < height; y++) {
    const row = Math.min(side - 1, Math.floor((y * side) / height)) * side;
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * 4;
      const cell = row + Math.min(side - 1, Math.floor((x * side) / width));
      sums[cell] += 0.299 * data[at] + 0.587 * data[at + 1] + 0.114 * data[at + 2];
      counts[cell]++;
    }
  }
  const thumb = new Uint8Array(side * side);
  for (let i = 0; i < thumb.length; i++) thumb[i] = counts[i] === 0 ? 0 : Math.round(sums[i] / counts[i]);
  return thumb;
}

parentPort.on('message', (msg) => {
  try {
    parentPort.postMessage({ id: msg.id, thumb: thumbnail(decode(msg.bytes)) });
  } catch {
    parentPort.postMessage({ id: msg.id, thumb: null });
  }
});
