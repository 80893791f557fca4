/**
 * Test videos made on the spot by the static ffmpeg the project ships (@ffmpeg-installer/ffmpeg, always installed):
 * ffmpeg's test pattern (testsrc2) and a sine tone, encoded as H.264 + AAC in mp4 or VP9 + Opus in webm. A 2 s
 * 160x120 clip takes ~0.1 s to make and is ~30 KB.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FFMPEG_PATH } from '../../src/media/video/decodeVideo.ts';

const run = promisify(execFile);

export interface TestVideo {
  readonly seconds: number;
  readonly width?: number;
  readonly height?: number;
  /** Source frame rate (default 10). */
  readonly rate?: number;
  readonly container?: 'mp4' | 'webm';
  readonly audio?: boolean;
}

export async function makeVideo(v: TestVideo): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'chorus-testvideo-'));
  try {
    const container = v.container ?? 'mp4';
    const out = join(dir, `clip.${container}`);
    const size = `${v.width ?? 160}x${v.height ?? 120}`;
    const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
    args.push('-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=${v.rate ?? 10}:duration=${v.seconds}`);
    if (v.audio) args.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${v.seconds}`);
    if (container === 'mp4') args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p');
    else args.push('-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-b:v', '200k');
    if (v.audio) args.push('-c:a', container === 'mp4' ? 'aac' : 'libopus');
    await run(FFMPEG_PATH, [...args, out]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A data: URL of the bytes, as a client sends a video. */
export function videoDataUrl(bytes: Uint8Array, type = 'video/mp4'): string {
  return `data:${type};base64,${Buffer.from(bytes).toString('base64')}`;
}
