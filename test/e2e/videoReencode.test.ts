/**
 * A clip encoded again instead of failed (issue 44 item 7), over real stage processes, real models and clips made by
 * the bundled ffmpeg:
 * - Its encode over the encoder's memory cap (encoder.max_encode_bytes: the run's working memory, estimated from the
 *   vision model before it starts) fails in the encoder with CHORUS_ERR_ENCODE_MEMORY; main runs the request again
 *   with the clip down its fallback until an encode fits, and the answer says so. Past the floor: a 400 naming the
 *   item and what to do, and the next request is answered (the encoder is not down).
 * - Its encode past the encoder's deadline (encoder.timeout_ms: the encoder stopped meanwhile) fails the same way with
 *   CHORUS_ERR_CHUNK_TIMEOUT: the clip steps down, and the answer says why.
 * - Each item run again is counted on /metrics (chorus_media_reencodes_total{reason, modality}), promtool-clean.
 * - Its encoder-output store entry lost in Redis between main's lookup and the Thinker's take (a key deleted, as
 *   Redis's eviction would): main encodes it again from the bytes it holds; the answer is the first one's.
 * - Its Thinker killed mid-answer with no store: the migrated replay has the clip encoded again from main's bytes
 *   (it was "not migrated" before), and the answer is the undisturbed one's.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../src/common/errors.ts';
import { parseConfig } from '../../src/config/loadConfig.ts';
import { thinkerStatsOf, type ThinkerEcStats } from '../../stages/thinker/protocol.ts';
import { channelNames } from '../../src/common/diagnostics.ts';
import type { GenerateRequest } from '../../src/common/engine.ts';
import { decodeVideo } from '../../src/media/video/decodeVideo.ts';
import { DEFAULT_VIDEO_GRID } from '../../src/media/video/videoGrid.ts';
import { collect, ownSegments, waitFor } from '../helpers/engine.ts';
import { RedisServer } from '../helpers/redisServer.ts';
import { makeVideo, videoDataUrl } from '../helpers/videos.ts';
import { promtoolProblems } from '../helpers/promtool.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';
import { parsePrometheus } from './serverClient.ts';

const ENCODER = (maxEncodeBytes: string, timeoutMs?: number) => `
  - stage_id: image-encoder
    kind: encoder
    engine: {threads: 1}
    encoder:
      {modality: image, cache_bytes: 1, max_encode_bytes: ${maxEncodeBytes}, video: {fps: 2, max_seconds: 20}${
        timeoutMs === undefined ? '' : `, timeout_ms: ${timeoutMs}`
      }}`;

const THINKER = (replicas: number, prefixCache = true) => `
  - stage_id: thinker
    kind: thinker
    engine: {threads: 1${prefixCache ? '' : ', prefix_cache: false'}}
    inputs: [{from: image-encoder}]
    final_output: true
    final_output_type: text
    replicas: ${replicas}`;

/** A server on port 0 over the pipeline of `yaml`. */
const serve = (yaml: string) => servePipeline(parseConfig(yaml, `${process.cwd()}/configs/reencode.yaml`));

interface ChatJson {
  readonly choices: readonly { readonly message: { readonly content: string } }[];
  readonly usage: { readonly prompt_tokens_details: { readonly video_tokens: number } };
  readonly chorus_warnings?: readonly string[];
  readonly error: { readonly code: string; readonly message: string };
}

/** chorus_media_reencodes_total{reason, modality="video"} on the server's /metrics (0 before the first). */
async function reencodesCounted(base: string, reason: 'memory' | 'timeout' | 'lost'): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const family = parsePrometheus(text).get('chorus_media_reencodes_total');
  return family?.samples.find((s) => s.labels.reason === reason && s.labels.modality === 'video')?.value ?? 0;
}

/** A question about the clip (a video_url part), answered in 6 tokens; or a text question. */
async function ask(base: string, clip: Buffer | null): Promise<{ status: number; json: ChatJson }> {
  const content = [
    ...(clip ? [{ type: 'video_url', video_url: { url: videoDataUrl(clip) } }] : []),
    { type: 'text', text: 'What happens here?' },
  ];
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content }], max_tokens: 6, seed: 5, ignore_eos: true }),
  });
  return { status: res.status, json: (await res.json()) as ChatJson };
}

describe('an encode over the memory cap steps the clip down', () => {
  let server: ServedPipeline | undefined;
  // 15 s of 320 x 240 at fps 2: 30 frames of 252 x 168, 3,240 patches (~74 MiB estimated, in 15 temporal groups)
  let big: Buffer;

  beforeAll(async () => {
    big = await makeVideo({ seconds: 15, width: 320, height: 240 });
    // 32 MiB: 7 frames of 252 x 168 (4 groups of 216 patches, ~20 MiB) fit; 15 (8 groups, ~40 MiB) do not.
    server = await serve(`model_preset: tiny\nstages:${ENCODER('32MiB')}${THINKER(2)}\n`);
  }, 240_000);

  afterAll(async () => {
    await server?.close();
    expect(ownSegments()).toEqual([]);
  });

  it('serves it with the frames an encode fits, and says so; /metrics counts each encode run again', async () => {
    const before = await reencodesCounted(server!.base, 'memory');
    const { status, json } = await ask(server!.base, big);
    expect(status).toBe(200);
    expect((await reencodesCounted(server!.base, 'memory')) - before).toBe(2);
    const exposition = await (await fetch(`${server!.base}/metrics`)).text();
    expect(parsePrometheus(exposition).get('chorus_media_reencodes_total')?.type).toBe('counter');
    expect(promtoolProblems(exposition)).toBe('');
    // 30 -> 15 -> 7 frames: two failed encodes, the third fits. 7 frames are 4 temporal groups of 6 x 9 rows.
    expect(json.usage.prompt_tokens_details.video_tokens).toBe(4 * 6 * 9);
    expect(json.chorus_warnings).toEqual([
      'messages[0].content[0] (video) was served with 7 frames of 252x168 instead of 30 frames of 252x168: its ' +
        'encode failed out of memory (CHORUS_ERR_ENCODE_MEMORY) and it was encoded again with fewer or smaller ' +
        'frames (encoder.video.fallback)',
    ]);
  });

  it('a Thinker killed mid-answer: its replay has the clip encoded again from main`s bytes, same answer', async () => {
    const e = server!.engine;
    const v = await decodeVideo(
      { kind: 'file', bytes: await makeVideo({ seconds: 2 }) },
      { fps: 2, maxFrames: 32 },
      DEFAULT_VIDEO_GRID,
      { maxSeconds: 20, maxInputBytes: 1 << 24, maxFrameBytes: 1 << 28, timeoutMs: 20_000 },
      'clip',
    );
    const { data, numFrames, width, height, fps } = v;
    const clip = { type: 'video', data, numFrames, width, height, fps, sourceKey: 'killed-clip' } as const;
    const request: GenerateRequest = {
      messages: [{ role: 'user', content: [clip, { type: 'text', text: 'And this one?' }] }],
      modalities: ['text'],
      sampling: { maxTokens: 300, ignoreEos: true, seed: 4 },
    };
    const reference = await collect(e.generate(request));
    const routedTo: string[] = [];
    const onRouted = (m: unknown) => routedTo.push((m as { instance: string }).instance);
    subscribe(channelNames.routeDecision, onRouted);
    let killed = false;
    const replayed = await collect(e.generate(request), (ev) => {
      if (ev.type !== 'text' || killed) return;
      killed = true;
      process.kill(e.workerOf(routedTo[0])!.pid!, 'SIGKILL');
    }).finally(() => unsubscribe(channelNames.routeDecision, onRouted));
    expect(killed).toBe(true);
    expect(replayed.done.error).toBeUndefined(); // before: "not migrated: ... encoders are not replayed"
    expect(replayed.text).toBe(reference.text);
    await waitFor('the Thinker back', () => e.health().every((h) => h.status === 'ready'), 60_000);
  });

  it('past the floor: a 400 naming the item and what to do; the next request is answered', async () => {
    await server!.close();
    server = await serve(`model_preset: tiny\nstages:${ENCODER('1MiB')}${THINKER(1)}\n`);
    const { status, json } = await ask(server.base, big);
    expect(status).toBe(400);
    expect(json.error.code).toBe(ErrorCodes.ENCODE_MEMORY);
    expect(json.error.message).toMatch(/^messages\[0\]\.content\[0\] \(video\): its encode needs ~1\.2 MiB/);
    expect(json.error.message).toContain('of working memory (96 patches), over the encoder');
    expect(json.error.message).toContain('ask a lower fps or max_frames, or raise max_encode_bytes');
    expect(json.error.message).toContain("at the fallback's floor (encoder.video.fallback)");
    expect((await ask(server.base, null)).status).toBe(200);
  });
});

describe('an encode past the encoder`s deadline steps the clip down', () => {
  let server: ServedPipeline | undefined;

  beforeAll(async () => {
    // The test stops the encoder (SIGSTOP) until the first run's deadline has passed: the hang watch must not take it
    // for hung meanwhile (stage_hang_ms). timeout_ms leaves the stepped-down clip's encode room on a loaded machine.
    server = await serve(`model_preset: tiny\nstage_hang_ms: 60000\nstages:${ENCODER('512MiB', 3000)}${THINKER(1)}\n`);
  }, 240_000);

  afterAll(async () => {
    await server?.close();
    expect(ownSegments()).toEqual([]);
  });

  it('serves it with fewer frames after the deadline, says why, and /metrics counts it', async () => {
    const clip = await makeVideo({ seconds: 4 }); // 8 frames at fps 2; the fallback's first step is 4 (min_frames)
    const encoder = server!.engine.workerOf('image-encoder#0')!.pid!;
    const before = await reencodesCounted(server!.base, 'timeout');
    // Stopped, its first encode cannot be on time; it goes on once main has run the request again (the event).
    const reencodes: unknown[] = [];
    const onReencode = (m: unknown) => {
      reencodes.push(m);
      process.kill(encoder, 'SIGCONT');
    };
    subscribe(channelNames.mediaReencode, onReencode);
    process.kill(encoder, 'SIGSTOP');
    const { status, json } = await ask(server!.base, clip).finally(() => {
      process.kill(encoder, 'SIGCONT');
      unsubscribe(channelNames.mediaReencode, onReencode);
    });
    expect(reencodes).toEqual([{ reason: 'timeout', modality: 'video' }]);
    expect(status).toBe(200);
    expect(json.chorus_warnings).toHaveLength(1);
    const said = new RegExp(
      String.raw`^messages\[0\]\.content\[0\] \(video\) was served with 4 frames of (\d+)x(\d+) instead of 8 frames ` +
        String.raw`of \1x\2: its encode failed past the encoder's timeout_ms \(CHORUS_ERR_CHUNK_TIMEOUT\) and it was ` +
        String.raw`encoded again with fewer or smaller frames \(encoder\.video\.fallback\)$`,
    ).exec(json.chorus_warnings![0]);
    expect(said).not.toBeNull();
    // 4 frames are 2 temporal groups of (width / 28) x (height / 28) rows.
    const [width, height] = [Number(said![1]), Number(said![2])];
    expect(json.usage.prompt_tokens_details.video_tokens).toBe(2 * (width / 28) * (height / 28));
    expect((await reencodesCounted(server!.base, 'timeout')) - before).toBe(1);
  });
});

describe('a lost encoder-output store entry is encoded again from main`s bytes', () => {
  let redis: RedisServer;
  let server: ServedPipeline | undefined;
  const thinkerEc = new Map<string, ThinkerEcStats>();
  const mediaSent: number[] = [];
  const onStats = (m: unknown) => {
    const s = m as { instance: string; kind?: unknown };
    const { ec } = thinkerStatsOf(s);
    if (ec) thinkerEc.set(s.instance, ec);
  };
  const onMedia = (m: unknown) => mediaSent.push((m as { bytes: number }).bytes);
  const prefix = `lost${process.pid}`;

  beforeAll(async () => {
    subscribe('chorus:stage:stats', onStats);
    subscribe('chorus:encoder:media', onMedia);
    redis = await RedisServer.start();
    // round_robin: the second request goes to the other Thinker, which has no copy and takes from Redis. No prefix
    // cache: its run after the lost take goes to the first Thinker, which would hold the clip's KV and skip its encode.
    server = await serve(
      `model_preset: tiny\nrouting: round_robin\n` +
        `ec_store: {url: "${redis.url}", key_prefix: ${prefix}, budget_bytes: 64MiB}\n` +
        `stages:${ENCODER('512MiB')}${THINKER(2, false)}\n`,
    );
  }, 240_000);

  afterAll(async () => {
    await server?.close();
    await redis?.stop();
    unsubscribe('chorus:stage:stats', onStats);
    unsubscribe('chorus:encoder:media', onMedia);
    expect(ownSegments()).toEqual([]);
  });

  it('answers as the first time: the clip encoded twice, the lost take counted', async () => {
    const clip = await makeVideo({ seconds: 2 });
    const lostBefore = await reencodesCounted(server!.base, 'lost');
    const first = await ask(server!.base, clip);
    expect(first.status).toBe(200);
    await waitFor('the clip`s rows in the store', () => server!.engine.ecStore!.stats.entries === 1);
    let keys: string[] = [];
    const deadline = Date.now() + 10_000;
    while ((keys = (await redis.keys()).filter((k) => k.startsWith(`${prefix}:ec:`))).length === 0) {
      if (Date.now() > deadline) throw new Error('the clip`s rows never reached Redis');
      await new Promise((r) => setTimeout(r, 20));
    }
    await redis.cli('DEL', ...keys); // lost, as Redis's eviction under maxmemory would lose it

    const again = await ask(server!.base, clip);
    expect(again.status).toBe(200);
    expect(again.json.choices[0].message.content).toBe(first.json.choices[0].message.content);
    expect(again.json.chorus_warnings).toBeUndefined();
    expect(mediaSent).toHaveLength(2); // main sent the clip's bytes to the encoder again
    await waitFor('the lost take counted', () => [...thinkerEc.values()].some((s) => s.lostTakes === 1));
    expect((await reencodesCounted(server!.base, 'lost')) - lostBefore).toBe(1);
  });
});
