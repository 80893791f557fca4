/**
 * Camera frames in a Realtime session, on the real tiny-omni pipeline: frames sent as `input_image` items are
 * encoded and prefilled as they arrive, a near-duplicate of the last kept frame is skipped (its item deleted), the
 * window keeps the newest `realtime.camera.max_frames` frames (the oldest deleted), and a question about what the
 * camera saw finds the frames' KV already computed and their rows already encoded: nothing of them is redone.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { encoderStatsOf } from '../../stages/encoder/protocol.ts';
import { jpegBytes } from '../helpers/media.ts';
import { RealtimeClient } from './serverClient.ts';
import { servePipeline, type ServedPipeline } from '../helpers/servePipeline.ts';

const MAX_FRAMES = 3;
let served: ServedPipeline | undefined;
let wsUrl: string;

beforeAll(async () => {
  const graph = await loadConfig(join(import.meta.dirname, '..', '..', 'configs', 'tiny-omni.yaml'));
  served = await servePipeline({ ...graph, realtimeCamera: { maxFrames: MAX_FRAMES, duplicateThreshold: 0.02 } });
  ({ wsUrl } = served);
}, 120_000);

afterAll(async () => {
  await served?.close();
});

const frameEvent = (id: string, seed: number) => ({
  type: 'conversation.item.create',
  item: {
    id,
    type: 'message',
    role: 'user',
    content: [
      {
        type: 'input_image',
        image_url: `data:image/jpeg;base64,${Buffer.from(jpegBytes(96, 72, seed)).toString('base64')}`,
      },
    ],
  },
});

/** Resolves with the end of the next prefill-only request that read `mediaItems` frames. */
function prefillOf(mediaItems: number): Promise<void> {
  const prefills = new Set<string>();
  return new Promise((resolve) => {
    const onStart = (m: unknown) => {
      const s = m as { requestId: string; mediaItems: number };
      if (s.requestId.includes('-prefill-') && s.mediaItems === mediaItems) prefills.add(s.requestId);
    };
    const onEnd = (m: unknown) => {
      if (!prefills.has((m as { requestId: string }).requestId)) return;
      unsubscribe(channelNames.requestStart, onStart);
      unsubscribe(channelNames.requestEnd, onEnd);
      resolve();
    };
    subscribe(channelNames.requestStart, onStart);
    subscribe(channelNames.requestEnd, onEnd);
  });
}

/** The image encoder's cumulative cache misses, from the second stats report from now (every 250 ms). */
function encoderMisses(): Promise<number> {
  let reports = 0;
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      const s = m as { stageId: string };
      if (s.stageId !== 'image-encoder' || ++reports < 2) return;
      unsubscribe(channelNames.stageStats, on);
      resolve((encoderStatsOf(m as never).encoder as { cacheMisses: number }).cacheMisses);
    };
    subscribe(channelNames.stageStats, on);
  });
}

describe('Realtime camera frames', () => {
  it('skips near-duplicates, keeps a window, and answers about the frames without redoing them', async () => {
    const rt = await RealtimeClient.connect(wsUrl);
    rt.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
    await rt.next('session.updated');

    // A frame, then the same picture again: the second is added, then deleted as a near-duplicate.
    rt.send(frameEvent('frame_1', 1));
    await rt.next('conversation.item.added', (e) => (e.item as { id: string }).id === 'frame_1');
    rt.send(frameEvent('frame_1b', 1));
    await rt.next('conversation.item.deleted', (e) => e.item_id === 'frame_1b');

    // Three more frames: the window holds three, so the first is dropped when the fourth is kept, and the frames
    // kept are prefilled (the last prefill reads the whole window).
    const windowPrefilled = prefillOf(MAX_FRAMES);
    for (const seed of [2, 3, 4]) rt.send(frameEvent(`frame_${seed}`, seed));
    await rt.next('conversation.item.deleted', (e) => e.item_id === 'frame_1', 10_000);
    await windowPrefilled;
    const deleted = rt.ofType('conversation.item.deleted').map((e) => e.item_id);
    expect(deleted).toEqual(['frame_1b', 'frame_1']);

    // A settings change (no turn detection) keeps what the frames prefilled.
    rt.send({ type: 'session.update', session: { type: 'realtime', output_modalities: ['text'] } });
    await rt.next('session.updated');

    // The question: the frames' positions come from the KV prefilled as they arrived, and no frame is encoded again.
    const missesBefore = await encoderMisses();
    const done = await rt.respond('What did the camera see?', { max_output_tokens: 2 }, 30_000);
    const usage = (done.response as { usage: { input_token_details: Record<string, number> } }).usage;
    const { image_tokens: imageTokens, cached_tokens: cachedTokens } = usage.input_token_details;
    expect(imageTokens).toBeGreaterThan(0);
    expect(cachedTokens).toBeGreaterThanOrEqual(imageTokens);
    expect(await encoderMisses()).toBe(missesBefore);
    rt.close();
    await rt.closed;
  }, 90_000);
});
