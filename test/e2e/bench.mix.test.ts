/**
 * `chorus bench --mix` at tiny scale on configs/epd.yaml: the bench starts the deployment itself (a redis-server, the
 * remote encoder instances), runs the seeded mixed workload and the idle probe, and reports every figure; afterwards
 * nothing it started is left (checked by pid). Never speed goals.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMix } from '../../bench/epd/formatMix.ts';
import { parseMix } from '../../bench/epd/mixWorkload.ts';
import { runMixBench, type MixBenchResult } from '../../bench/epd/runMixBench.ts';
import { logger } from '../../src/common/log.ts';
import { benchProcesses, isAlive } from '../helpers/processes.ts';

const EPD = join(import.meta.dirname, '..', '..', 'configs', 'epd.yaml');

describe('chorus bench --mix (configs/epd.yaml, remote encoders over Redis)', () => {
  let result: MixBenchResult;
  const bench = benchProcesses();
  const spawned = bench.spawned;

  beforeAll(async () => {
    result = await bench.run(() =>
      runMixBench({
        config: EPD,
        routers: ['ttft'],
        // Seed 0 with these shares: 5 text requests, an image and its repeat, a 19 s clip.
        mix: parseMix('text=1,image=1,audio=1'),
        numRequests: 8,
        ratePerSecond: 8,
        repeatShare: 1,
        maxTokens: 4,
        seed: 0,
        log: logger,
      }),
    );
  }, 180_000);

  afterAll(() => bench.killLeft());

  it('measures every request by modality, the encoder cache, the encoders busy time', () => {
    expect(result.workload).toEqual({ requests: { text: 5, image: 2, audio: 1, video: 0 }, repeats: 1 });
    const [run] = result.runs;
    expect(run.router).toBe('ttft');
    expect([run.completed, run.failed]).toEqual([8, 0]);
    expect([run.ttft.text.n, run.ttft.image.n, run.ttft.audio.n, run.ttft.overall.n]).toEqual([5, 2, 1, 8]);
    for (const k of ['text', 'image', 'audio', 'overall'] as const) expect(run.ttft[k].p99_ms!).toBeGreaterThan(0);
    expect(result.text_ttft_p99_ms).toEqual({ ttft: run.ttft.text.p99_ms });
    // Every item was looked up in the encoder-output store; the repeated image was encoded once: the store had it
    // (its bytes reached no encoder), or it came while the first was still encoding and hit the encoder's cache.
    expect(run.ec_store.hits + run.ec_store.misses).toBe(3);
    expect(run.ec_store.hits + run.encoder_cache.hits).toBe(1);
    expect(run.encoder_cache.hits + run.encoder_cache.misses).toBe(run.ec_store.misses);
    expect(Object.keys(run.encoder_busy_s).sort()).toEqual([
      'audio-encoder#bench-0',
      'audio-encoder#bench-1',
      'image-encoder#bench-0',
    ]);
    expect(run.encoder_busy_s['image-encoder#bench-0']).toBeGreaterThan(0);
    expect(run.requests.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const report = formatMix(result, 'chorus bench --mix');
    expect(report).toMatch(/^## router ttft: 8 completed, 0 failed in /m);
    expect(report).toMatch(/^\| text \| [\d.]+ \| [\d.]+ \| 5 \|$/m);
  });

  it('leaves no stage process and no redis-server behind', () => {
    expect(spawned.map((p) => p.role).sort()).toEqual(['redis-server', 'stage', 'stage', 'stage']);
    for (const p of spawned) expect(isAlive(p.pid), `${p.name} (pid ${p.pid})`).toBe(false);
  });
});
