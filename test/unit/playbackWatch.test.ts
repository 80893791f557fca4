/**
 * A spoken answer's playback as the server hands it out (src/server/admission/PlaybackWatch.ts): an underrun is a
 * chunk handed over more than UNDERRUN_MS after the audio before it played out, reported once; and the running limit
 * counts an answer that underran as late (RequestQueue.underran).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PlaybackWatch, UNDERRUN_MS } from '../../src/server/admission/PlaybackWatch.ts';
import { RequestQueue } from '../../src/server/admission/RequestQueue.ts';
import { DECREASE } from '../../src/server/admission/RunningLimit.ts';

describe('PlaybackWatch', () => {
  it('plays from the first chunk: chunks ahead of playback or late by at most the threshold are no underrun', () => {
    let underruns = 0;
    const watch = new PlaybackWatch(() => underruns++);
    watch.audio(160, 1_000); // plays out at 1160
    watch.audio(2_000, 1_100); // ahead: plays out at 3160
    watch.audio(2_000, 3_160 + UNDERRUN_MS); // a gap of exactly the threshold
    expect(underruns).toBe(0);
    watch.audio(500, 5_260 + UNDERRUN_MS + 1); // played out at 5260: silence longer than the threshold
    watch.audio(500, 9_000); // another gap: reported once
    expect(underruns).toBe(1);
  });

  it('holds no gap against the server once the client stopped reading', () => {
    let underruns = 0;
    const watch = new PlaybackWatch(() => underruns++);
    watch.audio(160, 0);
    watch.clientPaused();
    watch.audio(160, 5_000);
    expect(underruns).toBe(0);
  });
});

describe('RequestQueue.underran', () => {
  afterEach(() => vi.useRealTimers());

  it('counts an answer that fell behind as late even when its first packet came in time', async () => {
    vi.useFakeTimers({ toFake: ['performance', 'setTimeout', 'clearTimeout'] });
    const queue = new RequestQueue(
      { maxRunning: 16, maxQueued: 8, maxWaitMs: 60_000 },
      {
        slo: () => ({ maxQueueMs: null, sloTtfpMs: 1_000 }),
        estimate: () => ({ queueMs: 0, ttftMs: 50, ttfpMs: 100 }),
        chunkTimeoutMs: () => 30_000,
      },
    );
    const slots = await Promise.all(Array.from({ length: 10 }, () => queue.acquire(true)));
    vi.advanceTimersByTime(200);
    for (const slot of slots) queue.firstPacket(slot); // all in time
    expect(queue.runningLimit).toBe(16);
    queue.underran(slots[0]);
    queue.underran(slots[0]); // once per answer
    expect(queue.runningLimit).toBe(16);
    queue.underran(slots[1]);
    expect(queue.runningLimit).toBe(10 * DECREASE);
    for (const release of slots) release();
    queue.underran(slots[2]); // released: nothing left to learn from
    expect(queue.runningLimit).toBe(8);
  });
});
