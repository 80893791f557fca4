import { describe, expect, it } from 'vitest';
import { GenerationScheduler } from '../../src/sched/GenerationScheduler.ts';
import { initialChunkForTarget, initialChunkFrames, nextCodecChunk } from '../../src/sched/chunkPolicy.ts';

describe('GenerationScheduler', () => {
  it('batches every request with a ready chunk, one chunk each, oldest first, up to maxNumSeqs', () => {
    const s = new GenerationScheduler(2);
    s.chunkArrived('a');
    s.chunkArrived('b');
    s.chunkArrived('a');
    s.chunkArrived('c');
    const first = s.schedule();
    expect(first.map((i) => i.requestId)).toEqual(['a', 'b']);
    s.update(first);
    // a still has a chunk, but c has waited longer since its chunk became ready.
    expect(s.schedule().map((i) => i.requestId)).toEqual(['c', 'a']);
  });

  it('drops a removed request and skips paused ones', () => {
    const s = new GenerationScheduler(4);
    s.chunkArrived('a');
    s.chunkArrived('b');
    s.pause('a');
    s.remove('b');
    expect(s.schedule()).toEqual([]);
    s.resume('a');
    expect(s.schedule()).toEqual([{ requestId: 'a' }]);
    expect(s.queueDepth).toBe(1);
  });

  it('a paused request takes no batch position: the others fill the batch, and it rejoins when resumed', () => {
    const s = new GenerationScheduler(2);
    for (const id of ['p', 'q', 'a', 'b']) s.chunkArrived(id);
    s.pause('p');
    s.pause('q');
    const batch = s.schedule();
    expect(batch.map((i) => i.requestId)).toEqual(['a', 'b']);
    s.update(batch);
    s.resume('p');
    expect(s.schedule().map((i) => i.requestId)).toEqual(['p']);
  });
});

describe('GenerationScheduler: first chunks first', () => {
  it("runs a newcomer's first chunk alone, ahead of a full batch of others, at most 4 steps in a row", () => {
    const s = new GenerationScheduler(2, 'fifo', true);
    for (const id of ['a', 'b']) s.chunkArrived(id);
    const started = s.schedule(); // nothing started yet: all first chunks, batched together
    expect(started.map((i) => i.requestId)).toEqual(['a', 'b']);
    s.update(started);
    for (const id of ['a', 'b', 'a', 'b']) s.chunkArrived(id); // long answers with chunks in hand
    s.chunkArrived('new');
    // Without the rule (fifo) it would wait behind a and b, whose chunks are older; now it steps alone.
    expect(s.schedule().map((i) => i.requestId)).toEqual(['new']);
    s.update([{ requestId: 'new' }]);
    expect(s.schedule().map((i) => i.requestId)).toEqual(['a', 'b']); // past its first chunk: fifo again
    // A stream of newcomers leaves the others a step in every five.
    const alone: string[][] = [];
    for (let i = 0; i < 5; i++) {
      s.chunkArrived(`n${i}`);
      const batch = s.schedule();
      alone.push(batch.map((b) => b.requestId));
      if (batch[0].requestId.startsWith('n')) continue; // the newcomer's chunk waits: nothing consumed
      s.update(batch);
    }
    expect(alone).toEqual([['n0'], ['n0', 'n1'], ['n0', 'n1'], ['n0', 'n1'], ['a', 'b']]);
  });

  it('is off unless asked (the tts orders its own runs)', () => {
    const s = new GenerationScheduler(2);
    s.chunkArrived('a');
    s.update(s.schedule());
    s.chunkArrived('a');
    s.chunkArrived('new');
    expect(s.schedule().map((i) => i.requestId)).toEqual(['a', 'new']);
  });
});

describe('chunk policy', () => {
  const policy = {
    initialCodecChunkFrames: null,
    codecChunkFrames: 25,
    codecLeftContextFrames: 25,
    dynamicInitialChunk: true,
    chunkTimeoutMs: 1000,
    maxChunkWaitMs: 10_000,
    ttfpTargetMs: null,
    firstPacketHold: true,
    firstAudioFirst: true,
    speechLeadMs: null,
    speechLeadMinAnswers: 12,
    speakingSlice: 4,
    firstPrefillSplit: 0.45,
  };

  it('grows the initial chunk with load, and lets a request override it', () => {
    expect(initialChunkFrames(policy, 1)).toBe(2);
    expect(initialChunkFrames(policy, 6)).toBe(4);
    expect(initialChunkFrames(policy, 100)).toBe(25);
    expect(initialChunkFrames(policy, 100, 2)).toBe(2);
    expect(initialChunkFrames({ ...policy, initialCodecChunkFrames: 10 }, 1)).toBe(10);
    expect(initialChunkFrames({ ...policy, dynamicInitialChunk: false }, 1)).toBe(25);
  });

  it(
    'cuts IC, then chunks no longer than the audio already sent (doubling up to 25), with left context, then the ' +
      'rest',
    () => {
      const chunks = [];
      let sent = 0;
      for (let produced = 1; produced <= 60; produced++) {
        const c = nextCodecChunk(policy, 4, produced, sent, produced === 60);
        if (c) {
          chunks.push(c);
          sent = c.end;
        }
      }
      expect(chunks).toEqual([
        { start: 0, contextFrames: 0, end: 4 },
        { start: 0, contextFrames: 4, end: 8 },
        { start: 0, contextFrames: 8, end: 16 },
        { start: 0, contextFrames: 16, end: 32 },
        { start: 7, contextFrames: 25, end: 57 },
        { start: 32, contextFrames: 25, end: 60 },
      ]);
      // Every chunk after the first is at most as long as the audio sent before it (no underrun by construction).
      for (let i = 1; i < chunks.length - 1; i++)
        expect(chunks[i].end - chunks[i - 1].end).toBeLessThanOrEqual(chunks[i - 1].end);
      expect(nextCodecChunk(policy, 4, 60, 60, true)).toBeNull();
    },
  );

  it('is the largest chunk that can still be out by the target, and reports a target out of reach', () => {
    // 100 ms left; prefill 20 ms yields frame 0; each further frame 10 ms -> 1 + 8 frames.
    expect(initialChunkForTarget(policy, 100, 20, 10)).toEqual({ frames: 9, met: true });
    expect(initialChunkForTarget(policy, 10_000, 20, 10)).toEqual({ frames: 25, met: true });
    expect(initialChunkForTarget(policy, 15, 20, 10)).toEqual({ frames: 1, met: false });
  });

  it('goes early, short of its size, when asked, with no left context; later chunks keep their rule', () => {
    expect(nextCodecChunk(policy, 12, 3, 0, false)).toBeNull(); // 3 of 12 frames: waits
    expect(nextCodecChunk(policy, 12, 3, 0, false, true)).toEqual({ start: 0, contextFrames: 0, end: 3 });
    // The next chunk is at most as long as the audio already sent (3 frames), with those 3 as context.
    expect(nextCodecChunk(policy, 12, 6, 3, false)).toEqual({ start: 0, contextFrames: 3, end: 6 });
  });
});
