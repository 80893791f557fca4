/**
 * A session's camera frames (CameraFrames): which items are frames, near-duplicates of the last kept frame skipped,
 * the window of recent frames with the oldest dropped, frames the client deleted meanwhile not counted; every kept
 * frame handed on to be prefilled, in the order the frames arrived.
 */
import { describe, expect, it } from 'vitest';
import { CameraFrames, isCameraFrame } from '../../src/server/realtime/CameraFrames.ts';
import type { StoredItem } from '../../src/server/realtime/Conversation.ts';
import type { FrameThumbs } from '../../src/server/realtime/FrameThumbs.ts';

/** A frame whose one image byte is its thumbnail's level: level 100 and 101 are 1/255 apart. */
const frame = (id: string, level: number): StoredItem => ({
  id,
  role: 'user',
  parts: [{ type: 'input_image', text: '', media: { type: 'image', data: new Uint8Array([level]) } }],
});

/** Thumbnails of 256 values at the frame's level; resolved in order, as the worker answers. */
const fakeThumbs = { of: (bytes: Uint8Array) => Promise.resolve(new Uint8Array(256).fill(bytes[0])) };

function camera(maxFrames: number, duplicateThreshold: number) {
  const items = new Set<string>();
  const dropped: string[] = [];
  const kept: string[] = [];
  const frames = new CameraFrames({ maxFrames, duplicateThreshold }, fakeThumbs as unknown as FrameThumbs, {
    has: (id) => items.has(id),
    drop: (id) => {
      items.delete(id);
      dropped.push(id);
    },
    kept: (id) => kept.push(id),
  });
  const arrive = (id: string, level: number) => {
    items.add(id);
    return frames.arrived(frame(id, level));
  };
  return { frames, items, dropped, kept, arrive };
}

describe('CameraFrames', () => {
  it('counts a user message of one input_image as a frame, and nothing else', () => {
    expect(isCameraFrame(frame('a', 1))).toBe(true);
    const withText: StoredItem = {
      ...frame('b', 1),
      parts: [...frame('b', 1).parts, { type: 'input_text', text: 'hi', media: null }],
    };
    expect(isCameraFrame(withText)).toBe(false);
    expect(isCameraFrame({ id: 'c', role: 'user', parts: [{ type: 'input_text', text: 'hi', media: null }] })).toBe(
      false,
    );
  });

  it('skips a frame near the last kept one, and compares with the last kept, not the last seen', async () => {
    const c = camera(8, 0.02);
    await c.arrive('f1', 100);
    await c.arrive('f2', 102); // 2/255 = 0.008 from f1: skipped
    await c.arrive('f3', 104); // 0.016 from f1 (the last kept): skipped
    await c.arrive('f4', 106); // 0.024 from f1: kept
    await c.arrive('f5', 107); // 0.004 from f4: skipped
    expect(c.kept).toEqual(['f1', 'f4']);
    expect(c.dropped).toEqual(['f2', 'f3', 'f5']);
    expect(c.frames.skipped).toBe(3);
    expect(c.frames.frames).toEqual(['f1', 'f4']);
  });

  it('keeps every frame with threshold 0', async () => {
    const c = camera(8, 0);
    for (let i = 0; i < 3; i++) await c.arrive(`f${i}`, 50);
    expect(c.kept).toEqual(['f0', 'f1', 'f2']);
    expect(c.dropped).toEqual([]);
  });

  it('keeps the newest maxFrames frames, dropping the oldest first', async () => {
    const c = camera(3, 0.02);
    for (let i = 0; i < 6; i++) await c.arrive(`f${i}`, i * 40);
    expect(c.dropped).toEqual(['f0', 'f1', 'f2']);
    expect(c.frames.frames).toEqual(['f3', 'f4', 'f5']);
    expect([...c.items]).toEqual(['f3', 'f4', 'f5']);
  });

  it('does not count frames the client deleted, nor judge a frame deleted before its thumbnail came', async () => {
    const c = camera(2, 0.02);
    await c.arrive('f0', 0);
    await c.arrive('f1', 40);
    c.items.delete('f1'); // conversation.item.delete from the client
    await c.arrive('f2', 41); // the last kept frame is gone: nothing to be a duplicate of
    expect(c.dropped).toEqual([]);
    expect(c.frames.frames).toEqual(['f0', 'f2']);
    const late = c.arrive('f3', 200);
    c.items.delete('f3');
    await late;
    expect(c.kept).toEqual(['f0', 'f1', 'f2']);
    expect(c.frames.frames).toEqual(['f0', 'f2']);
  });

  it('judges nothing after close', async () => {
    const c = camera(2, 0.02);
    const pending = c.arrive('f0', 0);
    c.frames.close();
    await pending;
    expect(c.kept).toEqual([]);
  });
});
