/** `chorus bench --mix`: the mix parser, the seeded workload, and the goal lines from a run's figures. */
import { describe, expect, it } from 'vitest';
import { mixGoals } from '../../bench/epd/formatMix.ts';
import { mixWorkload, parseMix } from '../../bench/epd/mixWorkload.ts';
import type { MixBenchResult, MixRun } from '../../bench/epd/runMixBench.ts';

describe('bench --mix workload', () => {
  it('parses shares and normalises them; refuses unknown kinds', () => {
    expect(parseMix('text=0.6,image=0.25,audio=0.15')).toEqual({ text: 0.6, image: 0.25, audio: 0.15, video: 0 });
    expect(parseMix('text=3,audio=1')).toEqual({ text: 0.75, image: 0, audio: 0.25, video: 0 });
    // Seed 001's shorthand: text/image/video.
    expect(parseMix('50/30/20')).toEqual({ text: 0.5, image: 0.3, audio: 0, video: 0.2 });
    expect(parseMix('text=8,video=2')).toEqual({ text: 0.8, image: 0, audio: 0, video: 0.2 });
    expect(() => parseMix('speech=1')).toThrow(/text, image, audio and video/);
    expect(() => parseMix('50/50')).toThrow(/text\/image\/video/);
    expect(() => parseMix('text=0')).toThrow(/more than 0/);
  });

  it('makes videos as main hands them to the engine: 8-32 RGB frames of 224 x 168, a source key each', () => {
    const videos = mixWorkload({
      mix: parseMix('0/0/1'),
      numRequests: 12,
      ratePerSecond: 5,
      repeatShare: 0.3,
      seed: 3,
    });
    expect(videos.every((r) => r.kind === 'video')).toBe(true);
    for (const r of videos) {
      const v = r.media as Extract<typeof r.media, { type: 'video' }>;
      expect(v.type).toBe('video');
      expect([v.numFrames >= 8, v.numFrames <= 32, v.numFrames === r.size]).toEqual([true, true, true]);
      expect(v.data.byteLength).toBe(v.numFrames * 224 * 168 * 3);
    }
    const fresh = videos.filter((r) => !r.repeat);
    expect(new Set(fresh.map((r) => (r.media as { sourceKey: string }).sourceKey)).size).toBe(fresh.length);
  });

  it('is the same for the same seed: kinds, sizes, arrival times and bytes; repeats reuse earlier bytes', () => {
    const o = { mix: parseMix('text=0.4,image=0.3,audio=0.3'), numRequests: 40, ratePerSecond: 5, repeatShare: 0.5 };
    const a = mixWorkload({ ...o, seed: 7 });
    const b = mixWorkload({ ...o, seed: 7 });
    expect(a.map((r) => [r.kind, r.size, r.atMs, r.repeat])).toEqual(b.map((r) => [r.kind, r.size, r.atMs, r.repeat]));
    a.forEach((r, i) =>
      expect(Buffer.compare(r.media?.data ?? Buffer.alloc(0), b[i].media?.data ?? Buffer.alloc(0))).toBe(0),
    );
    expect(mixWorkload({ ...o, seed: 8 }).map((r) => r.atMs)).not.toEqual(a.map((r) => r.atMs));
    const repeats = a.filter((r) => r.repeat);
    expect(repeats.length).toBeGreaterThan(0);
    for (const r of repeats) {
      const first = a.find((x) => !x.repeat && x.media !== null && x.media.data === r.media!.data);
      expect(first?.index).toBeLessThan(r.index);
    }
    for (const r of a.filter((x) => x.kind === 'image')) expect(r.size).toBeGreaterThanOrEqual(224);
    for (const r of a.filter((x) => x.kind === 'image')) expect(r.size).toBeLessThanOrEqual(1080);
    for (const r of a.filter((x) => x.kind === 'audio')) expect([r.size >= 5, r.size <= 30]).toEqual([true, true]);
  });
});

function run(router: MixRun['router'], textP99: number, clip: number, text: number): MixRun {
  const q = { n: 1, p50_ms: 1, p99_ms: 1 };
  return {
    router,
    completed: 1,
    failed: 0,
    duration_s: 1,
    ttft: { overall: q, text: { ...q, p99_ms: textP99 }, image: q, audio: q, video: q },
    text_ttft_p99_ms: textP99,
    ec_store: { hits: 0, misses: 0 },
    ec_hit_rate: null,
    encoder_cache: { hits: 0, misses: 0 },
    encoder_busy_s: {},
    repeat_clip_ttft_ms: clip,
    equal_text_ttft_ms: text,
    repeat_clip_prompt_tokens: 777,
    equal_text_prompt_tokens: 777,
    text_prediction_error_ms: q,
    requests: [],
  };
}

describe('bench --mix goals', () => {
  it('text p99 ttft / least_loaded against 0.7, and the repeated clip against 1.2x text', () => {
    const result = (runs: MixRun[]) => ({ runs }) as unknown as MixBenchResult;
    const met = mixGoals(result([run('ttft', 60, 110, 100), run('least_loaded', 100, 150, 100)]));
    expect(met.text_p99_ratio).toBe(0.6);
    expect(met.text_p99_met).toBe(true);
    expect(met.repeat_clip_ratio).toEqual({ ttft: 1.1, least_loaded: 1.5 });
    expect(met.repeat_clip_met).toEqual({ ttft: true, least_loaded: false });
    const missed = mixGoals(result([run('ttft', 80, 100, 100), run('least_loaded', 100, 100, 100)]));
    expect(missed.text_p99_met).toBe(false);
    expect(mixGoals(result([run('ttft', 80, 100, 100)])).text_p99_ratio).toBeNull();
  });
});
