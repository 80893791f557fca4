/** `chorus bench --mix`: the mix parser, the seeded workload, and the Markdown report of a run's figures. */
import { describe, expect, it } from 'vitest';
import { mixWorkload, parseMix } from '../../bench/epd/mixWorkload.ts';
import { formatMix } from '../../bench/epd/formatMix.ts';
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

  it('makes videos as main hands them to the engine: 8-32 RGB frames of 252 x 168 at 2 fps, a source key each', () => {
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
      expect([v.width, v.height, v.fps]).toEqual([252, 168, 2]);
      expect(v.data.byteLength).toBe(v.numFrames * 252 * 168 * 3);
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

describe('bench --mix report', () => {
  it('renders a Markdown section per router: TTFT by modality, encoder hits and busy time, prediction error', () => {
    const q = (p50: number, p99: number, n: number) => ({ n, p50_ms: p50, p99_ms: p99 });
    const run: MixRun = {
      router: 'ttft',
      completed: 7,
      failed: 1,
      duration_s: 4.5,
      ttft: {
        overall: q(40, 900, 8),
        text: q(14, 30, 5),
        image: q(44, 60, 2),
        audio: q(120, 120, 1),
        video: q(0, 0, 0),
      },
      text_ttft_p99_ms: 30,
      ec_store: { hits: 1, misses: 2 },
      ec_hit_rate: 1 / 3,
      encoder_cache: { hits: 0, misses: 2 },
      encoder_busy_s: { 'image-encoder#0': 1.25 },
      requests: [],
    };
    const result = {
      options: { config: 'configs/epd.yaml', ratePerSecond: 2, seed: 0 },
      workload: { requests: { text: 5, image: 2, audio: 1, video: 0 }, repeats: 1 },
      runs: [run],
      load_1m: { start: 1, end: 2 },
    } as unknown as MixBenchResult;
    const lines = formatMix(result, 'chorus bench --mix 5/3/2').split('\n');
    expect(lines[0]).toBe('# chorus bench --mix results');
    expect(lines).toContain('## router ttft: 7 completed, 1 failed in 4.5 s');
    expect(lines).toContain('| text | 14.0 | 30.0 | 5 |');
    expect(lines).toContain('- EC store hits 1 of 3; encoder cache hits 0 of 2; encoder busy image-encoder#0 1.25 s');
  });
});
