/**
 * The video decoder (a child ffmpeg): sampling at the asked fps, uniform picks under max_frames, frame sizing, and
 * each refusal naming the item and the limit: corrupt, truncated, too long, too large, too slow; the child's priority
 * (set by the decoder spawner, whose child it is: test/unit/decoderSpawner.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { DecoderSpawner } from '../../src/media/video/DecoderSpawner.ts';
import { decodeVideo, type VideoLimits } from '../../src/media/video/decodeVideo.ts';
import { DEFAULT_VIDEO_GRID, videoEmbeddingCount } from '../../src/media/video/videoGrid.ts';
import { pngBytes } from '../helpers/media.ts';
import { makeVideo } from '../helpers/videos.ts';

const limits: VideoLimits = { maxSeconds: 60, maxInputBytes: 8e6, maxFrameBytes: 64e6, timeoutMs: 10_000 };
const sampling = { fps: 2, maxFrames: 32 };

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code: string; message: string };
  }
  throw new Error('accepted');
}

describe('decodeVideo', () => {
  let mp4: Buffer;
  let webm: Buffer;
  beforeAll(async () => {
    [mp4, webm] = await Promise.all([
      makeVideo({ seconds: 4, width: 320, height: 240, audio: true }),
      makeVideo({ seconds: 3, container: 'webm', audio: true }),
    ]);
  });

  it('samples an H.264 mp4 at the asked fps, frames sized to the patch grid with the aspect kept', async () => {
    const v = await decodeVideo({ kind: 'file', bytes: mp4 }, sampling, DEFAULT_VIDEO_GRID, limits, 'clip');
    expect(v.numFrames).toBe(8); // 4 s at 2 fps
    expect(v.fps).toBe(2);
    // 320x240 shrunk to <= 224^2 px: floor(320 * 0.808 / 28) * 28 = 252, floor(240 * 0.808 / 28) * 28 = 168
    expect([v.width, v.height]).toEqual([252, 168]);
    expect(v.data.byteLength).toBe(8 * 252 * 168 * 3);
    expect(videoEmbeddingCount(v.numFrames, v.width, v.height, DEFAULT_VIDEO_GRID)).toBe(4 * 9 * 6);
  });

  it('picks max_frames uniformly over the clip and reports the rate they stand for', async () => {
    const all = await decodeVideo({ kind: 'file', bytes: mp4 }, sampling, DEFAULT_VIDEO_GRID, limits, 'clip');
    const few = await decodeVideo(
      { kind: 'file', bytes: mp4 },
      { fps: 2, maxFrames: 3 },
      DEFAULT_VIDEO_GRID,
      limits,
      'c',
    );
    expect([few.numFrames, few.sampledFrames]).toEqual([3, 8]);
    expect(few.fps).toBeCloseTo(0.75); // 3 frames over 4 s
    const frame = (d: Uint8Array, i: number) => Buffer.from(d.subarray(i * 252 * 168 * 3, (i + 1) * 252 * 168 * 3));
    // frames 0, 4 (round(3.5)) and 7 of the 8
    expect(frame(few.data, 0).equals(frame(all.data, 0))).toBe(true);
    expect(frame(few.data, 1).equals(frame(all.data, 4))).toBe(true);
    expect(frame(few.data, 2).equals(frame(all.data, 7))).toBe(true);
  });

  it('decodes VP9 in webm, and a clip given as frame images', async () => {
    const v = await decodeVideo({ kind: 'file', bytes: webm }, sampling, DEFAULT_VIDEO_GRID, limits, 'clip');
    expect([v.numFrames, v.width, v.height]).toEqual([6, 140, 112]); // 160x120: no enlarging, floored to 28 px
    const images = [1, 2, 3].map((seed) => pngBytes(64, 64, seed));
    const f = await decodeVideo({ kind: 'frames', images }, sampling, DEFAULT_VIDEO_GRID, limits, 'frames');
    expect([f.numFrames, f.width, f.height, f.fps]).toEqual([3, 56, 56, 2]);
  });

  it("runs the decoder at the nice value it is given (its encoder's: below the Thinker)", async () => {
    const target = Math.min(19, getPriority() + 11);
    /** The decoder spawner's ffmpeg children now, with their nice values (field 19 of /proc/<pid>/stat). */
    const spawner = DecoderSpawner.shared().pid!;
    const decoders = () =>
      readdirSync(`/proc/${spawner}/task`)
        .flatMap((tid) => readFileSync(`/proc/${spawner}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean))
        .flatMap((pid) => {
          try {
            const [name, rest] = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ');
            return name.endsWith('(ffmpeg') ? [Number(rest.split(' ')[16])] : [];
          } catch {
            return []; // exited meanwhile
          }
        });
    const images = Array.from({ length: 12 }, (_, k) => pngBytes(112, 112, k));
    const decoding = decodeVideo(
      { kind: 'frames', images },
      sampling,
      DEFAULT_VIDEO_GRID,
      { ...limits, nice: target },
      'f',
    );
    const seen: number[] = [];
    let done = false;
    void decoding.finally(() => (done = true));
    // Look while it runs (it reads 12 frames from its pipe: tens of ms at least); every look finds it at `target`.
    while (!done) {
      seen.push(...decoders());
      await new Promise((r) => setImmediate(r));
    }
    expect((await decoding).numFrames).toBe(12);
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen)).toEqual(new Set([target]));
  });

  it('refuses corrupt, truncated, too long, too large and too slow videos, naming the item and the limit', async () => {
    const corrupt = Buffer.from(mp4);
    for (let i = 4000; i < corrupt.length - 4000; i += 97) corrupt[i] ^= 0x5a;
    const decode = (bytes: Uint8Array, l: Partial<VideoLimits> = {}) =>
      refusal(decodeVideo({ kind: 'file', bytes }, sampling, DEFAULT_VIDEO_GRID, { ...limits, ...l }, 'item 3'));
    expect(await decode(corrupt)).toMatchObject({ code: ErrorCodes.VIDEO_INVALID, message: /^item 3: the video/ });
    expect(await decode(mp4.subarray(0, mp4.length / 2))).toMatchObject({ code: ErrorCodes.VIDEO_INVALID });
    expect(await decode(new TextEncoder().encode('not a video'))).toMatchObject({ code: ErrorCodes.VIDEO_INVALID });
    expect(await decode(mp4, { maxSeconds: 2 })).toMatchObject({
      code: ErrorCodes.VIDEO_TOO_LONG,
      message: 'item 3: the video is longer than the 2 s limit',
    });
    expect(await decode(mp4, { maxInputBytes: 1000 })).toMatchObject({
      code: ErrorCodes.VIDEO_TOO_LARGE,
      message: `item 3: the video is ${mp4.length} bytes; the limit is 1000`,
    });
    expect(await decode(mp4, { maxFrameBytes: 200_000 })).toMatchObject({
      code: ErrorCodes.VIDEO_TOO_LARGE,
      message: /over the 200000-byte limit/,
    });
    expect(await decode(mp4, { timeoutMs: 1 })).toMatchObject({
      code: ErrorCodes.VIDEO_DECODE_TIMEOUT,
      message: 'item 3: decoding took over the 1 ms limit',
    });
  });
});
