/**
 * The clips the video benches ask about: a test pattern made by the ffmpeg Chorus decodes with (the same static
 * build), and the chat body that asks a question about one.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';

const run = promisify(execFile);

export interface ClipSound {
  /** A 440 Hz tone beside the picture, as AAC. */
  readonly tone?: boolean;
  /** x264's constant rate factor (its default, 23, when absent; a long clip is kept small with 35). */
  readonly crf?: number;
}

/** A test-pattern clip (H.264, 320 x 240, 10 fps) whose hue is `hue` degrees (null: as made): a clip of its own. */
export async function benchClip(seconds: number, hue: number | null, o: ClipSound = {}): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'chorus-benchclip-'));
  try {
    const out = join(dir, 'clip.mp4');
    const args = ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y'];
    args.push('-f', 'lavfi', '-i', `testsrc2=size=320x240:rate=10:duration=${seconds}`);
    if (o.tone)
      args.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`, '-c:a', 'aac');
    if (hue !== null) args.push('-vf', `hue=h=${hue}`);
    if (o.crf !== undefined) args.push('-crf', String(o.crf));
    args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', out);
    await run(ffmpegInstaller.path, args);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A chat completion body asking `text` about `clip` (a data: URL), answered in 2 tokens; the clip comes before the
 * question unless `textFirst` (the burst's order).
 */
export function videoQuestion(clip: Buffer, text: string, { textFirst = false } = {}) {
  const video = { type: 'video_url', video_url: { url: `data:video/mp4;base64,${clip.toString('base64')}` } };
  const question = { type: 'text', text };
  return {
    max_tokens: 2,
    messages: [{ role: 'user', content: textFirst ? [question, video] : [video, question] }],
  };
}
