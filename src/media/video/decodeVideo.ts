/**
 * Untrusted video -> sampled RGB frames, decoded by a child ffmpeg (npm @ffmpeg-installer/ffmpeg: a static build that
 * installs with `npm ci`, with h264, hevc, vp8, vp9, av1, aac, opus and vorbis decoders). Decoding a client's file is
 * risky and slow, so it never runs in main's event loop: the child talks to us through its pipes only, under a time
 * limit (SIGKILL at the deadline), with caps on the input bytes, on the sampled frames' bytes and on the clip's length
 * (the child is killed as soon as one is passed, not after it has decoded everything). Nor does main start it: the
 * decoder spawner does (DecoderSpawner.ts: a fork from main stopped its event loop for a time growing with its
 * memory), and main reads the child's output sockets directly.
 *
 * The input goes to the child as a file in a private temporary folder (removed afterwards): an mp4 whose index (moov)
 * comes after its data, as phones write them, cannot be read from a pipe. Frame lists (a video sent as images) are
 * written there one image after another and read with image2pipe.
 *
 * With `withAudio` (use_audio_in_video) the same child also writes the clip's first audio track as 16 kHz mono pcm16
 * on a third pipe (fd 3), for the audio encoder; a clip without one is refused (CHORUS_ERR_VIDEO_NO_AUDIO), never
 * answered as if unheard.
 *
 * Errors name the item and the limit: CHORUS_ERR_VIDEO_INVALID (corrupt, truncated, no video stream),
 * CHORUS_ERR_VIDEO_TOO_LONG, CHORUS_ERR_VIDEO_TOO_LARGE, CHORUS_ERR_VIDEO_DECODE_TIMEOUT, CHORUS_ERR_VIDEO_NO_AUDIO.
 * A decode whose request is gone (its `cancel` signal aborted: the client disconnected) kills its child at once and
 * ends with CHORUS_ERR_REQUEST_CANCELLED once the child has exited, instead of running to a limit for nobody.
 */
import type { Readable } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ffmpegInstaller from '@ffmpeg-installer/ffmpeg';
import { ChorusError, ErrorCodes, type ErrorCode } from '../../common/errors.ts';
import { DecoderSpawner } from './DecoderSpawner.ts';
import { PpmFrames, type RgbFrame } from './PpmFrames.ts';
import { effectiveFps, scaleFilter, uniformPick, type VideoGridConfig, type VideoSampling } from './videoGrid.ts';

export interface VideoLimits {
  /** A longer clip is refused (its length at the sampling rate). */
  readonly maxSeconds: number;
  /** Input bytes (the file, or the frame images together). */
  readonly maxInputBytes: number;
  /** Bytes of all frames sampled before the max_frames pick (RGB at the frame size). */
  readonly maxFrameBytes: number;
  /** Wall time of the child, from spawn to exit. */
  readonly timeoutMs: number;
  /** The child's priority (an absolute nice value, set before it starts decoding); absent: its parent's. */
  readonly nice?: number;
}

export type VideoSource =
  | { readonly kind: 'file'; readonly bytes: Uint8Array }
  | { readonly kind: 'frames'; readonly images: readonly Uint8Array[] };

export interface DecodedVideo {
  /** numFrames RGB frames of width x height, one after another. */
  readonly data: Uint8Array;
  readonly numFrames: number;
  readonly width: number;
  readonly height: number;
  /** The rate the kept frames stand for (videoGrid.ts effectiveFps). */
  readonly fps: number;
  /** Frames sampled before the max_frames pick. */
  readonly sampledFrames: number;
  /** With `withAudio`: the first audio track, 16 kHz mono pcm16 little-endian. */
  readonly audio?: Uint8Array;
}

/** The audio track's rate and width as the audio encoder takes it (pcm16 at 16 kHz). */
export const TRACK_SAMPLE_RATE_HZ = 16_000;
const TRACK_BYTES_PER_SECOND = TRACK_SAMPLE_RATE_HZ * 2;

export const FFMPEG_PATH: string = ffmpegInstaller.path;

function fail(code: ErrorCode, what: string, problem: string): ChorusError {
  return new ChorusError(code, `${what}: ${problem}`);
}

function inputBytes(source: VideoSource): number {
  return source.kind === 'file' ? source.bytes.byteLength : source.images.reduce((n, b) => n + b.byteLength, 0);
}

function ffmpegArgs(source: VideoSource, inputPath: string, sampling: VideoSampling, grid: VideoGridConfig) {
  const common = ['-hide_banner', '-loglevel', 'error', '-xerror', '-nostdin', '-threads', '1'];
  const input =
    source.kind === 'file'
      ? ['-i', inputPath]
      : ['-f', 'image2pipe', '-framerate', String(sampling.fps), '-i', inputPath];
  // A frame list is already sampled: each image is one frame at the rate the client gave.
  const filters = [...(source.kind === 'file' ? [`fps=${sampling.fps}`] : []), scaleFilter(grid), 'format=rgb24'];
  const output = ['-map', '0:v:0', '-an', '-sn', '-dn', '-vf', filters.join(','), '-f', 'image2pipe', '-c:v', 'ppm'];
  // The track, when asked: a second output of the same child, on fd 3 (its first audio stream, mixed down to mono).
  const track = sampling.withAudio
    ? ['-map', '0:a:0', '-vn', '-sn', '-dn', '-ac', '1', '-ar', String(TRACK_SAMPLE_RATE_HZ)]
    : [];
  const trackOut = sampling.withAudio ? [...track, '-f', 's16le', '-c:a', 'pcm_s16le', 'pipe:3'] : [];
  return [...common, ...input, ...output, 'pipe:1', ...trackOut];
}

/**
 * Decodes and samples a video; throws a CHORUS_ERR_VIDEO_* error naming `what` and the limit it passed, or
 * CHORUS_ERR_REQUEST_CANCELLED once `cancel` aborts (its child killed and exited).
 */
export async function decodeVideo(
  source: VideoSource,
  sampling: VideoSampling,
  grid: VideoGridConfig,
  limits: VideoLimits,
  what: string,
  cancel?: AbortSignal,
): Promise<DecodedVideo> {
  if (cancel?.aborted) throw cancelled(what);
  const size = inputBytes(source);
  if (size > limits.maxInputBytes) {
    throw fail(ErrorCodes.VIDEO_TOO_LARGE, what, `the video is ${size} bytes; the limit is ${limits.maxInputBytes}`);
  }
  if (source.kind === 'frames' && source.images.length / sampling.fps > limits.maxSeconds) {
    throw fail(
      ErrorCodes.VIDEO_TOO_LONG,
      what,
      `${source.images.length} frames at ${sampling.fps} fps are ${(source.images.length / sampling.fps).toFixed(1)} ` +
        `s of video; the limit is ${limits.maxSeconds} s`,
    );
  }
  if (sampling.withAudio && source.kind === 'frames') throw noAudio(what, 'a clip sent as frame images has none');
  const dir = await mkdtemp(join(tmpdir(), 'chorus-video-'));
  try {
    const inputPath = join(dir, 'input');
    await writeFile(inputPath, source.kind === 'file' ? source.bytes : source.images, { mode: 0o600 });
    const args = ffmpegArgs(source, inputPath, sampling, grid);
    const run = await runDecoder(source.kind, args, sampling, limits, what, cancel);
    const { frames } = run;
    const picked = uniformPick(frames.length, sampling.maxFrames).map((i) => frames[i]);
    const { width, height } = picked[0];
    const data = new Uint8Array(picked.length * width * height * 3);
    picked.forEach((f, i) => data.set(f.data, i * f.data.length));
    return {
      data,
      numFrames: picked.length,
      width,
      height,
      fps: effectiveFps(frames.length, picked.length, sampling.fps),
      sampledFrames: frames.length,
      ...(run.audio ? { audio: run.audio } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the child to its end (or kills it at the first limit passed) and returns the frames it wrote. The spawner
 * starts it at `limits.nice`, so the whole decode runs at it.
 */
async function runDecoder(
  kind: VideoSource['kind'],
  args: readonly string[],
  sampling: VideoSampling,
  limits: VideoLimits,
  what: string,
  cancel: AbortSignal | undefined,
): Promise<{ frames: RgbFrame[]; audio: Uint8Array | null }> {
  const outputCount = sampling.withAudio ? 3 : 2; // fd 1 the frames, fd 2 its complaints, fd 3 the track
  const child = await DecoderSpawner.shared().spawn(FFMPEG_PATH, args, outputCount, limits.nice ?? null);
  const [stdout, stderrStream, trackStream] = child.outputs;
  return new Promise((resolve, reject) => {
    const frames: RgbFrame[] = [];
    const reader = new PpmFrames();
    // One frame past the limit proves the clip is longer (frame k is at k / fps s).
    const maxSampled = Math.floor(limits.maxSeconds * sampling.fps) + 1;
    let frameBytes = 0;
    let stderr = '';
    let failure: ChorusError | null = null;
    const stop = (err: ChorusError): void => {
      failure ??= err;
      child.kill();
    };
    const timer = setTimeout(
      () => stop(fail(ErrorCodes.VIDEO_DECODE_TIMEOUT, what, `decoding took over the ${limits.timeoutMs} ms limit`)),
      limits.timeoutMs,
    );
    // Aborted while the spawn was under way too: the child is killed as soon as it is ours.
    const onCancel = (): void => stop(cancelled(what));
    cancel?.addEventListener('abort', onCancel, { once: true });
    if (cancel?.aborted) onCancel();
    const settle = (): void => {
      clearTimeout(timer);
      cancel?.removeEventListener('abort', onCancel);
    };
    stdout.on('data', (chunk: Buffer) => {
      if (failure) return;
      let got: RgbFrame[];
      try {
        got = reader.push(chunk);
      } catch (err) {
        return stop(fail(ErrorCodes.VIDEO_INVALID, what, (err as Error).message));
      }
      for (const f of got) {
        frames.push(f);
        frameBytes += f.data.byteLength;
        if (kind === 'file' && frames.length > maxSampled) {
          return stop(
            fail(ErrorCodes.VIDEO_TOO_LONG, what, `the video is longer than the ${limits.maxSeconds} s limit`),
          );
        }
        if (frameBytes > limits.maxFrameBytes) {
          return stop(
            fail(
              ErrorCodes.VIDEO_TOO_LARGE,
              what,
              `its frames sampled at ${sampling.fps} fps are over the ${limits.maxFrameBytes}-byte limit; send a ` +
                `shorter clip or a lower fps`,
            ),
          );
        }
      }
    });
    const track = trackStream ? collectTrack(trackStream, limits, what, stop) : null;
    stderrStream.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    // A socket error (the child's end gone at a kill) is not the decode's outcome: its exit says what went wrong.
    for (const s of child.outputs) s.on('error', () => {});
    child.closed.then(
      ({ code }) => {
        settle();
        if (failure) return reject(failure);
        if (track && /Stream map '0:a:0' matches no streams/.test(stderr))
          return reject(noAudio(what, 'the file has no audio stream'));
        if (code !== 0 || !reader.atBoundary) return reject(fail(ErrorCodes.VIDEO_INVALID, what, decoderSays(stderr)));
        if (frames.length === 0)
          return reject(fail(ErrorCodes.VIDEO_INVALID, what, 'the video has no frames that decode'));
        if (frames.some((f) => f.width !== frames[0].width || f.height !== frames[0].height))
          return reject(fail(ErrorCodes.VIDEO_INVALID, what, 'the frames of one video must all have the same size'));
        const audio = track?.bytes() ?? null;
        if (track && (audio === null || audio.byteLength < 2)) return reject(noAudio(what, 'its audio track is empty'));
        resolve({ frames, audio });
      },
      (err: ChorusError) => {
        settle();
        reject(new ChorusError(err.code, `${what}: ${err.message}`, { cause: err }));
      },
    );
  });
}

/** Gathers the track from fd 3, under the clip's length limit (stop() kills the child past it). */
function collectTrack(
  pipe: Readable,
  limits: VideoLimits,
  what: string,
  stop: (err: ChorusError) => void,
): { bytes(): Uint8Array } {
  const chunks: Buffer[] = [];
  let size = 0;
  const maxBytes = Math.ceil(limits.maxSeconds * TRACK_BYTES_PER_SECOND) + TRACK_BYTES_PER_SECOND;
  pipe.on('data', (chunk: Buffer) => {
    size += chunk.byteLength;
    if (size > maxBytes)
      return stop(
        fail(ErrorCodes.VIDEO_TOO_LONG, what, `its audio track is longer than the ${limits.maxSeconds} s limit`),
      );
    chunks.push(chunk);
  });
  // An odd last byte (a cut sample) is dropped: pcm16 is whole samples.
  return { bytes: () => new Uint8Array(Buffer.concat(chunks).subarray(0, size & ~1)) };
}

function cancelled(what: string): ChorusError {
  return fail(
    ErrorCodes.REQUEST_CANCELLED,
    what,
    'the request was cancelled (its client left) while its video decoded',
  );
}

function noAudio(what: string, why: string): ChorusError {
  return fail(
    ErrorCodes.VIDEO_NO_AUDIO,
    what,
    `mm_processor_kwargs.use_audio_in_video is true but the video has no audio track to hear (${why}): send a clip ` +
      'with sound, or leave use_audio_in_video out to have its frames seen alone',
  );
}

/** The decoder's last complaint, as the reason a video was refused (our paths stripped: not the client's business). */
function decoderSays(stderr: string): string {
  const lines = stderr
    .split('\n')
    .map((l) => l.replace(/\/\S*chorus-video-[^\s:]*/g, 'the video').trim())
    .filter((l) => l.length > 0);
  const last = lines.at(-1) ?? 'the decoder failed';
  return `the video cannot be decoded (corrupt, truncated, or not a video): ${last.slice(0, 200)}`;
}
