/**
 * The runtime end to end: real stage processes, real models, shared-memory rings. One engine per mode, reused
 * across tests of that mode (starting one costs a few process boots).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelNames } from '../../src/common/diagnostics.ts';
import { code2wavStatsOf, type Code2WavStats } from '../../stages/code2wav/protocol.ts';
import type { StageStats } from '../../src/worker/messages.ts';
import { Orchestrator } from '../../src/engine/Orchestrator.ts';
import type { GenerateRequest } from '../../src/common/engine.ts';
import {
  collect,
  configWith,
  maxPcm16Diff,
  ownSegments,
  TALKER_MIGRATION_OFF,
  waitFor,
  type Collected,
} from '../helpers/engine.ts';

const request = (prompt: string, maxTokens: number, extra: Partial<GenerateRequest> = {}): GenerateRequest => ({
  messages: [{ role: 'user', content: prompt }],
  modalities: ['text', 'audio'],
  sampling: { maxTokens, ignoreEos: true, seed: 7 },
  talkerSampling: { ignoreEos: true, seed: 7 },
  ...extra,
});

const PROMPTS = [
  'Tell me about the sea.',
  'Hi',
  'What is a chorus, and why do voices blend?',
  'Count to ten',
  'A',
  'Speak slowly',
  'Why is the sky blue at noon?',
  'Sing',
];

describe('runtime (async_chunk on vs off)', () => {
  let asyncEngine: Orchestrator;
  let syncEngine: Orchestrator;
  const alone = new Map<number, Collected>();
  let reference24: Collected; // the 24-token answer to PROMPTS[0]

  beforeAll(async () => {
    [asyncEngine, syncEngine] = await Promise.all([
      // The Talker's migration off: the kill below is about a lost stage's failure path (migration.test.ts: replay).
      Orchestrator.start(configWith('tiny-omni-text-in.yaml', TALKER_MIGRATION_OFF)),
      Orchestrator.start(configWith('tiny-omni-sync.yaml')),
    ]);
  }, 240_000);

  afterAll(async () => {
    await Promise.all([asyncEngine?.close(), syncEngine?.close()]);
    expect(ownSegments()).toEqual([]); // every ring unlinked
  });

  it('gives identical text and audio (within one pcm16 step) in async and sync modes', async () => {
    const a = await collect(asyncEngine.generate(request(PROMPTS[0], 24)));
    const s = await collect(syncEngine.generate(request(PROMPTS[0], 24)));
    expect(a.done.finishReason).toBe('length');
    expect(s.done.finishReason).toBe('length');
    expect(a.text.length).toBeGreaterThan(0);
    expect(a.text).toBe(s.text);
    expect(a.done.usage.completionTokens).toBe(24);
    expect(a.pcm.length).toBe(24 * 2 * 1920); // 2 frames per token, 1920 samples per frame
    expect(maxPcm16Diff(a.pcm, s.pcm)).toBeLessThanOrEqual(1);
    // async streams audio in several chunks; sync sends it as one.
    expect(a.events.filter((e) => e.type === 'audio').length).toBeGreaterThan(1);
    expect(s.events.filter((e) => e.type === 'audio').length).toBe(1);
    reference24 = a;
  });

  it('alone, the Thinker waits for the first audio after the tokens its first chunk needs', async () => {
    const a = await collect(asyncEngine.generate(request(PROMPTS[2], 24)));
    const firstAudio = a.events.findIndex((e) => e.type === 'audio');
    const tokensBefore = a.events
      .slice(0, firstAudio)
      .reduce((n, e) => n + (e.type === 'text' ? e.tokenIds.length : 0), 0);
    // One request: a 2-frame first chunk needs the first token's row; one token more keeps the Talker stepping.
    expect(firstAudio).toBeGreaterThan(0);
    expect(tokensBefore).toBeGreaterThanOrEqual(1);
    expect(tokensBefore).toBeLessThanOrEqual(2);
    expect(a.done.usage.completionTokens).toBe(24); // and then the answer goes on to its end
  });

  it('at concurrency 8 with mixed lengths, every answer equals its concurrency-1 answer', async () => {
    const lengths = [5, 40, 12, 33, 8, 21, 17, 28];
    for (let i = 0; i < PROMPTS.length; i++)
      alone.set(i, await collect(asyncEngine.generate(request(PROMPTS[i], lengths[i]))));
    const together = await Promise.all(PROMPTS.map((p, i) => collect(asyncEngine.generate(request(p, lengths[i])))));
    together.forEach((t, i) => {
      const ref = alone.get(i)!;
      expect(t.done.finishReason).toBe('length');
      expect(t.text).toBe(ref.text);
      expect(maxPcm16Diff(t.pcm, ref.pcm)).toBeLessThanOrEqual(1);
      // Chunk order and end of stream: audio seq counts up from 0 with no gap, done comes last.
      const seqs = t.events.flatMap((e) => (e.type === 'audio' ? [e.seq] : []));
      expect(seqs).toEqual(seqs.map((_, k) => k));
      expect(t.events.at(-1)!.type).toBe('done');
    });
  });

  it('runs only the Thinker for a text-only request', async () => {
    const r = await collect(asyncEngine.generate({ ...request(PROMPTS[1], 6), modalities: ['text'] }));
    expect(r.done.finishReason).toBe('length');
    expect(r.pcm.length).toBe(0);
    expect(r.text).toBe(alone.get(1)!.text.slice(0, r.text.length));
  });

  it('cancel mid-stream ends the request as cancelled and frees it in every stage', async () => {
    const handle = asyncEngine.generate(request(PROMPTS[2], 200));
    const r = await collect(handle, (e) => {
      if (e.type === 'audio') handle.cancel();
    });
    expect(r.done.finishReason).toBe('cancelled');
    const afterDone = r.events.slice(r.events.findIndex((e) => e.type === 'done') + 1);
    expect(afterDone).toEqual([]);
    await waitFor('every stage to drop the request', () => asyncEngine.health().every((h) => h.inFlight === 0));
  });

  it('Code2Wav keeps vocoder state only for live requests (freed on finish, cancel), decodes frames once', async () => {
    const reports: Code2WavStats[] = [];
    const onStats = (m: unknown) => {
      const stats = m as StageStats & { stageId: string };
      const { code2wav } = code2wavStatsOf(stats);
      if (stats.stageId === 'code2wav' && code2wav) reports.push(code2wav);
    };
    subscribe(channelNames.stageStats, onStats);
    try {
      const finished = collect(asyncEngine.generate(request(PROMPTS[5], 20)));
      const long = asyncEngine.generate(request(PROMPTS[6], 400));
      let firstAudio = false;
      const cancelled = collect(long, (e) => {
        if (e.type === 'audio') firstAudio = true;
      });
      await waitFor('the long answer`s first audio', () => firstAudio);
      const seen = reports.length;
      await waitFor('a stats report holding its state', () => reports.slice(seen).some((r) => r.states >= 1));
      expect((await finished).done.finishReason).toBe('length');
      long.cancel();
      expect((await cancelled).done.finishReason).toBe('cancelled');
      await waitFor('every stage to drop the requests', () => asyncEngine.health().every((h) => h.inFlight === 0));
      const after = reports.length;
      await waitFor('a stats report after both ended', () => reports.length > after);
      const last = reports.at(-1)!;
      expect(last.states).toBe(0);
      expect(last.audioFrames).toBeGreaterThan(0);
      expect(last.framesDecoded).toBe(last.audioFrames); // left context never decoded again
    } finally {
      unsubscribe(channelNames.stageStats, onStats);
    }
  });

  it('killing the Talker mid-stream fails only its requests; the next request succeeds after the restart', async () => {
    const talker = asyncEngine.workerOf('talker#0')!;
    const audioReq = asyncEngine.generate(request(PROMPTS[3], 150));
    const textOnly = asyncEngine.generate({ ...request(PROMPTS[4], 60), modalities: ['text'] });
    const textDone = collect(textOnly);
    const r = await collect(audioReq, (e) => {
      if (e.type === 'audio' && e.seq === 0) talker.kill('SIGKILL');
    });
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_STAGE_DIED');
    expect((await textDone).done.finishReason).toBe('length');
    await waitFor('the talker to restart', () => asyncEngine.health().every((h) => h.status === 'ready'), 60_000);
    const again = await collect(asyncEngine.generate(request(PROMPTS[0], 24)));
    expect(again.done.finishReason).toBe('length');
    expect(again.text).toBe(reference24.text);
    expect(maxPcm16Diff(again.pcm, reference24.pcm)).toBeLessThanOrEqual(1);
    expect(asyncEngine.health().find((h) => h.stageId === 'talker')!.restarts).toBe(1);
  });
});

describe('runtime deadlines', () => {
  // chunk_timeout_ms 300: the waits below pass it many times. The hang watch is kept out of the way (a stopped
  // stage is its to find in 2 s: test/e2e/hang.test.ts), so that the chunk waits alone are seen.
  let engine: Orchestrator;
  beforeAll(async () => {
    engine = await Orchestrator.start(
      configWith('tiny-omni-text-in.yaml', {
        'chunk_timeout_ms: 30000': 'chunk_timeout_ms: 300\n  max_chunk_wait_ms: 3000',
        'async_chunk: true': 'async_chunk: true\nstage_hang_ms: 60000',
      }),
    );
  }, 120_000);
  afterAll(async () => {
    await engine?.close();
  });

  it('a request held 5x past its chunk deadline by live stages completes: slow, not lost (issue 41)', async () => {
    const reference = await collect(engine.generate(request(PROMPTS[0], 24)));
    const handle = engine.generate(request(PROMPTS[0], 24));
    // Paused, every stage holds the request without stepping it (alive and queued, as behind 16 long answers or
    // starved of CPU) for 1.5 s: five chunk timeouts. The wall clock alone failed it at the first.
    let resumeAt = 0;
    const r = await collect(handle, (e) => {
      if (e.type !== 'text' || resumeAt !== 0) return;
      handle.pause();
      resumeAt = Date.now() + 1_500;
      setTimeout(() => handle.resume(), 1_500);
    });
    expect(r.done.error).toBeUndefined();
    expect(r.done.finishReason).toBe('length');
    expect(r.text).toBe(reference.text);
    expect(Date.now()).toBeGreaterThanOrEqual(resumeAt);
  }, 60_000);

  it('a wait kept open by live stages still ends at max_chunk_wait_ms with the chunk timeout', async () => {
    const handle = engine.generate(request(PROMPTS[0], 100));
    let pausedAt = 0;
    const r = await collect(handle, (e) => {
      if (e.type !== 'text' || pausedAt !== 0) return;
      handle.pause(); // held for good: no chunk comes
      pausedAt = Date.now();
    });
    const waitedMs = Date.now() - pausedAt;
    expect(r.done.finishReason).toBe('error');
    expect(r.done.error?.code).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
    expect(r.done.error?.message).toContain('(3000 ms, chunk_policy.max_chunk_wait_ms, its producer live all along)');
    expect(waitedMs).toBeGreaterThanOrEqual(2_000);
    await waitFor('every stage to drop the request', () => engine.health().every((h) => h.inFlight === 0));
  }, 60_000);

  it('a stopped Thinker is not live: the wait on it ends at its deadline with the chunk timeout', async () => {
    const thinker = engine.workerOf('thinker#0')!;
    let stoppedAt = 0;
    try {
      const r = await collect(engine.generate(request(PROMPTS[0], 100)), (e) => {
        if (e.type !== 'text' || stoppedAt !== 0) return;
        process.kill(thinker.pid!, 'SIGSTOP');
        stoppedAt = Date.now();
      });
      const endedAfterMs = Date.now() - stoppedAt;
      expect(r.done.finishReason).toBe('error');
      expect(r.done.error?.code).toBe('CHORUS_ERR_CHUNK_TIMEOUT');
      expect(r.done.error?.message).toMatch(/from thinker#0 did not arrive in time/);
      expect(endedAfterMs).toBeLessThan(2_500); // its deadline (at most 600 ms of renewals), not max_chunk_wait_ms
    } finally {
      process.kill(thinker.pid!, 'SIGCONT');
    }
    await waitFor('every stage to drop the request', () => engine.health().every((h) => h.inFlight === 0));
  }, 60_000);
});
