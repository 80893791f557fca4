/**
 * A clip heard with its audio track (mm_processor_kwargs.use_audio_in_video) over a real pipeline (an audio encoder,
 * an image encoder serving video, a Thinker: processes, ONNX models, shared memory): the track of an ffmpeg-made mp4
 * (H.264 + an AAC 440 Hz tone) and webm (VP9 + Opus) goes through the audio encoder and is counted in usage beside the
 * frames; a silent clip asked to be heard gets a 400 naming it; a second question reuses the KV of both streams; and
 * the same clip seen without its track shares only what comes before its first chunk of sound (the frames of the
 * first 2 s come first, as TMRoPE interleaves them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { ownSegments } from '../helpers/engine.ts';
import { makeVideo, videoDataUrl } from '../helpers/videos.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const CONFIG = `
model_preset: tiny
connectors:
  shm: { kind: shm }
stages:
  - stage_id: audio-encoder
    kind: encoder
    model: {}
    encoder: { modality: audio }
  - stage_id: image-encoder
    kind: encoder
    model: {}
    encoder:
      modality: image
      video: { fps: 2, max_frames: 16, max_seconds: 20, audio_chunk_seconds: 2 }
  - stage_id: thinker
    kind: thinker
    model: {}
    engine: { max_num_seqs: 4, media_rows_bytes: 400KiB, prefix_cache: { max_bytes: 64MiB, block_positions: 16 } }
    inputs: [{ from: audio-encoder, connector: shm }, { from: image-encoder, connector: shm }]
    final_output: true
    final_output_type: text
    default_sampling_params: { max_tokens: 2 }
`;

let served: ServedPipeline | undefined;
let base: string;
let mp4: Buffer; // 4 s, 160 x 120, H.264 + AAC tone
let webm: Buffer; // 3 s, VP9 + Opus tone
let silent: Buffer; // 2 s, no audio stream
let tenSeconds: Buffer; // 10 s with a tone: 16 frames (max_frames) + 250 track rows, over the 400 rows budget
let twenty: Buffer; // 20 s with a tone: its track alone (500 rows) is over the budget

beforeAll(async () => {
  [mp4, webm, silent, tenSeconds, twenty] = await Promise.all([
    makeVideo({ seconds: 4, audio: true }),
    makeVideo({ seconds: 3, container: 'webm', audio: true }),
    makeVideo({ seconds: 2 }),
    makeVideo({ seconds: 10, audio: true, rate: 4 }),
    makeVideo({ seconds: 20, audio: true, rate: 4 }),
  ]);
  served = await servePipeline(parseConfig(CONFIG, `${process.cwd()}/configs/video-audio-test.yaml`));
  ({ base } = served);
}, 240_000);

afterAll(async () => {
  await served?.close();
  expect(ownSegments()).toEqual([]);
});

interface Answer {
  readonly status: number;
  readonly json: {
    readonly usage: {
      readonly prompt_tokens_details: { video_tokens: number; audio_tokens: number; cached_tokens: number };
    };
    readonly error: { readonly code: string; readonly message: string };
    readonly chorus_warnings?: readonly string[];
  };
}

async function ask(url: string, text: string, heard: boolean): Promise<Answer> {
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'video_url', video_url: { url } },
            { type: 'text', text },
          ],
        },
      ],
      mm_processor_kwargs: { use_audio_in_video: heard },
    }),
  });
  return { status: res.status, json: (await res.json()) as Answer['json'] };
}

describe('a video heard with its audio track', () => {
  it('sends the track through the audio encoder and counts it beside the frames (mp4/AAC, webm/Opus)', async () => {
    const heard = await ask(videoDataUrl(mp4), 'What do you hear?', true);
    expect(heard.status, JSON.stringify(heard.json)).toBe(200);
    // 8 frames of 140 x 112: 4 groups x 4 x 5 rows; the track: 4 s at 25 rows a second (+ the encoder's priming)
    const d = heard.json.usage.prompt_tokens_details;
    expect(d.video_tokens).toBe(80);
    expect(d.audio_tokens).toBeGreaterThanOrEqual(100);
    expect(d.audio_tokens).toBeLessThanOrEqual(102);
    const opus = await ask(videoDataUrl(webm, 'video/webm'), 'What do you hear?', true);
    expect(opus.status, JSON.stringify(opus.json)).toBe(200);
    expect(opus.json.usage.prompt_tokens_details.video_tokens).toBe(60);
    expect(opus.json.usage.prompt_tokens_details.audio_tokens).toBeGreaterThanOrEqual(75);
  });

  it('a second question reuses both streams; seen without its track, only the first chunk of frames', async () => {
    const first = await ask(videoDataUrl(mp4), 'Is it loud?', true);
    const d = first.json.usage.prompt_tokens_details;
    const second = (await ask(videoDataUrl(mp4), 'Is it a tone?', true)).json.usage.prompt_tokens_details;
    // Everything up to the question, in whole blocks of 16: the clip and its track come from the cache.
    expect(second.cached_tokens).toBeGreaterThanOrEqual(d.video_tokens + d.audio_tokens - 16);
    // Without the track the clip's first 2 s of frames (2 groups, 40 rows) still lead, then its next frames where
    // the heard prompt had sound: the cache covers the template and those 40 rows at most, in whole blocks.
    const seen = (await ask(videoDataUrl(mp4), 'Is it a tone?', false)).json.usage.prompt_tokens_details;
    expect(seen.audio_tokens).toBe(0);
    expect(seen.cached_tokens).toBeGreaterThanOrEqual(32);
    expect(seen.cached_tokens).toBeLessThan(80);
  });

  it('refuses a silent clip asked to be heard with a 400 naming it; seen alone it is answered', async () => {
    const refused = await ask(videoDataUrl(silent), 'What do you hear?', true);
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe(ErrorCodes.VIDEO_NO_AUDIO);
    expect(refused.json.error.message).toMatch(
      /^messages\[0\]\.content\[0\] \(video\): mm_processor_kwargs\.use_audio_in_video is true but .*no audio/,
    );
    expect((await ask(videoDataUrl(silent), 'What do you see?', false)).status).toBe(200);
  });

  it('serves a clip over the rows budget with fewer frames and says so; over it at the floor, a 400', async () => {
    const served = await ask(videoDataUrl(tenSeconds), 'What happens?', true);
    expect(served.status, JSON.stringify(served.json)).toBe(200);
    // 16 frames (8 groups x 20 rows) + 250 track rows = 410 rows of 1 KiB: over 400 KiB; 8 frames fit (330)
    expect(served.json.usage.prompt_tokens_details.video_tokens).toBe(80);
    const warnings = served.json.chorus_warnings ?? [];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      'messages[0].content[0] (video) was served with 8 frames of 140x112 instead of 16 frames of 140x112 to fit ' +
        "the Thinker's budget for media rows",
    );
    const refused = await ask(videoDataUrl(twenty), 'What happens?', true);
    expect([refused.status, refused.json.error.code]).toEqual([400, ErrorCodes.MEDIA_ROWS_BUDGET]);
  });
});
