/**
 * Video through the front end over a real pipeline (an image encoder serving video, and a Thinker, as processes;
 * ONNX models, shared memory): the openai SDK sends video_url parts (cast) and gets an answer whose usage counts the
 * clip's rows as sampled (fps, max_frames); a clip as frame images is counted the same way; a corrupt and a too-long
 * clip get 400s whose code names the problem and whose message names the item and the limit, and the server answers
 * the next request; a client that leaves while its clip decodes has its decoder killed at once; mm_processor_kwargs
 * are honoured or refused by name. Videos are made here by the bundled ffmpeg.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { existsSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { ErrorCodes } from '../../src/common/errors.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { ownSegments } from '../helpers/engine.ts';
import { pngBytes } from '../helpers/media.ts';
import { makeVideo, videoDataUrl } from '../helpers/videos.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const CONFIG = `
model_preset: tiny
connectors:
  shm: { kind: shm }
stages:
  - stage_id: image-encoder
    kind: encoder
    model: {}
    encoder:
      modality: image
      video: { fps: 2, max_frames: 16, max_seconds: 5, fallback: false } # refusals here; videoAudio tests the fallback
  - stage_id: thinker
    kind: thinker
    model: {}
    engine: { max_num_seqs: 4, media_rows_bytes: 300KiB }
    inputs: [{ from: image-encoder, connector: shm }]
    final_output: true
    final_output_type: text
    default_sampling_params: { max_tokens: 4 }
`;

let served: ServedPipeline | undefined;
let base: string;
let sdk: OpenAI;
let clip: Buffer; // 4 s, 320 x 240, H.264 + AAC
let webm: Buffer; // 3 s, 160 x 120, VP9 + Opus
let long: Buffer; // 6 s: over max_seconds

beforeAll(async () => {
  [clip, webm, long] = await Promise.all([
    makeVideo({ seconds: 4, width: 320, height: 240, audio: true }),
    makeVideo({ seconds: 3, container: 'webm', audio: true }),
    makeVideo({ seconds: 6 }),
  ]);
  served = await servePipeline(parseConfig(CONFIG, `${process.cwd()}/configs/video-test.yaml`));
  ({ base } = served);
  sdk = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
}, 240_000);

afterAll(async () => {
  await served?.close();
  expect(ownSegments()).toEqual([]);
});

const videoPart = (url: string) => ({ type: 'video_url', video_url: { url } }) as never;

interface ChatJson {
  readonly usage: { readonly prompt_tokens_details: { readonly video_tokens: number } };
  readonly error: { readonly code: string; readonly message: string; readonly param: string | null };
}

async function metricsText(): Promise<string> {
  return (await fetch(`${base}/metrics`)).text();
}

async function post(body: unknown): Promise<{ status: number; json: ChatJson }> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as ChatJson };
}

const ask = (part: unknown, kwargs?: unknown) => ({
  messages: [{ role: 'user', content: [{ type: 'text', text: 'What happens?' }, part] }],
  max_tokens: 4,
  ...(kwargs ? { mm_processor_kwargs: kwargs } : {}),
});

describe('video input', () => {
  it('answers a video_url sent by the openai SDK; usage counts the clip as sampled', async () => {
    const answer = await sdk.chat.completions.create({
      model: 'chorus-video-test',
      max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What happens?' }, videoPart(videoDataUrl(clip))] }],
    });
    expect(answer.choices[0].message.content?.length).toBeGreaterThan(0);
    // 4 s at 2 fps = 8 frames of 252 x 168 (320 x 240 shrunk to <= 224^2 px, sides floored to 28 px):
    // 8 / 2 temporal groups x 6 x 9 merged patches
    const details = answer.usage!.prompt_tokens_details as Record<string, number>;
    expect(details.video_tokens).toBe(4 * 6 * 9);
  });

  it('honours fps and max_frames per request, and counts webm/VP9 and frame lists the same way', async () => {
    const tokens = async (part: unknown, kwargs?: unknown) => {
      const r = await post(ask(part, kwargs));
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      return r.json.usage.prompt_tokens_details.video_tokens;
    };
    expect(await tokens(videoPart(videoDataUrl(clip)), { fps: 1 })).toBe(2 * 54); // 4 frames
    expect(await tokens(videoPart(videoDataUrl(clip)), { max_frames: 3 })).toBe(2 * 54); // 3 frames, odd one padded
    // 3 s at 2 fps = 6 frames of 140 x 112 (160 x 120 is not enlarged): 3 x 4 x 5
    expect(await tokens(videoPart(videoDataUrl(webm, 'video/webm')))).toBe(3 * 4 * 5);
    const frames = [1, 2, 3, 4, 5].map(
      (seed) => `data:image/png;base64,${Buffer.from(pngBytes(56, 84, seed)).toString('base64')}`,
    );
    expect(await tokens({ type: 'video', video: frames })).toBe(3 * 3 * 2); // 5 frames of 56 x 84
  });

  it('refuses a corrupt and a too-long clip with a 400 naming the item and the limit; then answers', async () => {
    const corrupt = Buffer.from(clip);
    for (let i = 4000; i < corrupt.length - 4000; i += 97) corrupt[i] ^= 0x5a;
    const bad = await post(ask(videoPart(videoDataUrl(corrupt))));
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe(ErrorCodes.VIDEO_INVALID);
    expect(bad.json.error.message).toMatch(/^messages\[0\]\.content\[1\] \(video\): the video cannot be decoded/);
    const tooLong = await post(ask(videoPart(videoDataUrl(long))));
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error).toMatchObject({
      code: ErrorCodes.VIDEO_TOO_LONG,
      message: 'messages[0].content[1] (video): the video is longer than the 5 s limit',
    });
    const fine = await post(ask(videoPart(videoDataUrl(clip))));
    expect(fine.status).toBe(200);
  });

  it('a client that leaves mid-decode: its decoder is killed at once, and the next request is answered', async () => {
    const heavy = await makeVideo({ seconds: 4, width: 1280, height: 720, rate: 30 }); // ~0.5 s of decoding
    const client = new AbortController();
    let [left, frozen] = [0, 0];
    const exited = new Promise<{ signal: string | null; afterMs: number }>((resolve) => {
      const onDecoder = (m: unknown): void => {
        const e = m as { event: 'spawned' | 'exit'; pid: number; signal?: string | null };
        if (e.event === 'exit' && e.pid === frozen) resolve({ signal: e.signal ?? null, afterMs: Date.now() - left });
        if (e.event !== 'spawned' || frozen !== 0) return;
        // Frozen as it starts, so it is surely mid-decode (it could never finish) when its client leaves.
        process.kill((frozen = e.pid), 'SIGSTOP');
        left = Date.now();
        client.abort();
      };
      subscribe(channelNames.videoDecoder, onDecoder);
      onTestFinished(() => void unsubscribe(channelNames.videoDecoder, onDecoder));
    });
    const sent = fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ask(videoPart(videoDataUrl(heavy)))),
      signal: client.signal,
    });
    await expect(sent).rejects.toThrow(/abort/i);
    const exit = await exited;
    // Killed for its gone client, well before decode_timeout_ms (20 s) would have killed it.
    expect(exit.signal).toBe('SIGKILL');
    expect(exit.afterMs).toBeLessThan(10_000);
    expect(existsSync(`/proc/${frozen}`)).toBe(false);
    expect((await post(ask(videoPart(videoDataUrl(clip))))).status).toBe(200);
  });

  it('a second question about the same clip reuses its decode and KV; sampled otherwise, it does not', async () => {
    const about = (text: string, fps: number) => ({
      messages: [{ role: 'user', content: [videoPart(videoDataUrl(clip)), { type: 'text', text }] }],
      max_tokens: 2,
      mm_processor_kwargs: { fps },
    });
    const cached = async (body: unknown) => {
      const r = await post(body);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      const details = r.json.usage.prompt_tokens_details as { video_tokens: number; cached_tokens?: number };
      return { video: details.video_tokens, cached: details.cached_tokens ?? 0 };
    };
    let spawned = 0;
    const onDecoder = (m: unknown): void => void ((m as { event: string }).event === 'spawned' && spawned++);
    subscribe(channelNames.videoDecoder, onDecoder);
    onTestFinished(() => void unsubscribe(channelNames.videoDecoder, onDecoder));
    const kept = async () =>
      Number(/^chorus_video_decodes_total\{result="kept"\} (\d+)$/m.exec(await metricsText())?.[1] ?? 0);
    const keptBefore = await kept();
    const first = await cached(about('What moves?', 1.5)); // 6 frames: 3 x 6 x 9 rows
    expect(first).toEqual({ video: 162, cached: 0 });
    expect(spawned).toBe(1);
    // The template's few tokens + 162 rows, in whole blocks of 16: at least 160 positions come from the cache, and
    // the frames from the clips main decoded (no decoder this time).
    expect((await cached(about('What colour is it?', 1.5))).cached).toBeGreaterThanOrEqual(160);
    expect([spawned, (await kept()) - keptBefore]).toEqual([1, 1]);
    // The same file at another rate is another clip: decoded again; only the template before it could match.
    expect((await cached(about('What colour is it?', 0.5))).cached).toBeLessThan(16);
    expect(spawned).toBe(2);
  });

  it("refuses a clip whose rows alone exceed the Thinker's media_rows_bytes; /metrics counts it", async () => {
    const over = await post(ask(videoPart(videoDataUrl(clip)), { fps: 4 })); // 16 frames: 8 x 54 rows of 1 KiB
    expect(over.status).toBe(400);
    expect(over.json.error.code).toBe(ErrorCodes.MEDIA_ROWS_BUDGET);
    expect(over.json.error.message).toMatch(/442368 bytes .*\(video\) 432 rows.*at most 307200 .*fps or max_frames/);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^chorus_media_rows_refusals_total [1-9]/m);
    expect(metrics).toMatch(/^chorus_media_rows_held_bytes\{stage="thinker#0"\} \d+$/m); // charged and released
  });

  it('refuses kwargs it cannot honour, by name (use_audio_in_video without an audio encoder)', async () => {
    const part = videoPart(videoDataUrl(webm, 'video/webm'));
    // This pipeline has no audio encoder: the track cannot be heard, and is refused rather than dropped.
    const audio = await post(ask(part, { use_audio_in_video: true }));
    expect([audio.status, audio.json.error.code]).toEqual([400, ErrorCodes.MEDIA_INVALID]);
    expect(audio.json.error.message).toMatch(
      /^messages\[0\]\.content\[1\] \(video\)'s audio track: .*no audio encoder/,
    );
    const many = await post(ask(part, { max_frames: 64 }));
    expect([many.status, many.json.error.param]).toEqual([400, 'mm_processor_kwargs.max_frames']);
    expect(many.json.error.message).toContain('at most 16 frames per clip');
    const unknown = await post(ask(part, { num_frames: 4 }));
    expect([unknown.status, unknown.json.error.param]).toEqual([400, 'mm_processor_kwargs.num_frames']);
  });
});
