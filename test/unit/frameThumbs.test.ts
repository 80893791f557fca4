/**
 * Camera frame thumbnails (FrameThumbs, made in a worker thread): box-averaged luma of JPEG and PNG frames, null for
 * bytes that are no image (the frame is then kept, never a failure), the distance the near-duplicate check uses, and
 * the worker's thread below main's.
 */
import jpeg from 'jpeg-js';
import { PNG } from 'pngjs';
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { FrameThumbs, THUMB_SIDE, thumbDistance } from '../../src/server/realtime/FrameThumbs.ts';

/** An RGBA image whose left half is `left` grey and right half `right` grey, plus seeded noise of +-noise levels. */
function halves(width: number, height: number, left: number, right: number, noise = 0, seed = 1): Buffer {
  const data = Buffer.alloc(width * height * 4);
  let s = seed;
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      const v = (x < width / 2 ? left : right) + (noise ? Math.round(((s / 2 ** 31) * 2 - 1) * noise) : 0);
      const at = (y * width + x) * 4;
      data.fill(Math.max(0, Math.min(255, v)), at, at + 3);
      data[at + 3] = 255;
    }
  return data;
}

const jpegOf = (data: Buffer, width: number, height: number) =>
  new Uint8Array(jpeg.encode({ data, width, height }, 95).data);

const thumbs = new FrameThumbs();
afterAll(() => thumbs.close());

describe('FrameThumbs', () => {
  it('makes a 16 x 16 luma thumbnail of a JPEG frame, box-averaged', async () => {
    const thumb = await thumbs.of(jpegOf(halves(96, 72, 20, 230), 96, 72));
    expect(thumb).not.toBeNull();
    expect(thumb!.length).toBe(THUMB_SIDE * THUMB_SIDE);
    for (let row = 0; row < THUMB_SIDE; row++) {
      expect(Math.abs(thumb![row * THUMB_SIDE] - 20)).toBeLessThanOrEqual(3);
      expect(Math.abs(thumb![row * THUMB_SIDE + THUMB_SIDE - 1] - 230)).toBeLessThanOrEqual(3);
    }
  });

  it('reads PNG frames too, and gives null for bytes that are no image', async () => {
    const png = new PNG({ width: 64, height: 48 });
    halves(64, 48, 200, 40).copy(png.data);
    const thumb = await thumbs.of(new Uint8Array(PNG.sync.write(png)));
    expect(thumb![0]).toBe(200);
    expect(thumb![THUMB_SIDE - 1]).toBe(40);
    expect(await thumbs.of(new Uint8Array([0xff, 0xd8, 0xff, 1, 2, 3]))).toBeNull();
  });

  it('puts sensor noise on a still scene under the default threshold, and a change of scene over it', async () => {
    const [still, noisy, moved] = await Promise.all([
      thumbs.of(jpegOf(halves(96, 72, 60, 180, 0), 96, 72)),
      thumbs.of(jpegOf(halves(96, 72, 60, 180, 12, 7), 96, 72)),
      thumbs.of(jpegOf(halves(96, 72, 180, 60, 0), 96, 72)),
    ]);
    expect(thumbDistance(still!, still!)).toBe(0);
    expect(thumbDistance(still!, noisy!)).toBeLessThan(0.02);
    expect(thumbDistance(still!, moved!)).toBeGreaterThan(0.4);
  });

  it("runs its worker's thread the given nice levels below main's threads, and only that thread", async () => {
    /** Nice values of this process's threads (field 19 of /proc/self/task/<tid>/stat). */
    const niceOfThreads = () =>
      readdirSync('/proc/self/task').map((tid) =>
        Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]),
      );
    const base = getPriority();
    const before = niceOfThreads();
    const lowered = new FrameThumbs(() => 5);
    try {
      expect(await lowered.of(jpegOf(halves(32, 24, 10, 90), 32, 24))).not.toBeNull();
      const after = niceOfThreads();
      expect(getPriority()).toBe(base); // main's thread keeps its priority
      const below = after.filter((n) => n === Math.min(19, base + 5)).length;
      expect(below - before.filter((n) => n === Math.min(19, base + 5)).length).toBe(1);
    } finally {
      await lowered.close();
    }
  });
});
