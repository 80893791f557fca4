/**
 * How the throughput limit is taken from its passes: the warm-up passes are dropped, each stage counts its least
 * on-CPU time over the measured passes (not the wall time, which other work on the machine stretches), and the limit
 * at concurrency c is never below the limit of a smaller measured batch.
 */
import { describe, expect, it } from 'vitest';
import { summarizeThroughput, throughputEnvelope, type ThroughputPass } from '../../bench/limit/throughputLimit.ts';

const times = (thinker: number, talker: number, code2wav: number): ThroughputPass => ({
  thinker_ms: thinker,
  talker_ms: talker,
  code2wav_ms: code2wav,
});
/** A pass whose wall times are `stretch` x its CPU times (other processes took the core part of the time). */
const pass = (thinker: number, talker: number, code2wav: number, stretch = 1.5) => ({
  cpu: times(thinker, talker, code2wav),
  wall: times(thinker * stretch, talker * stretch, code2wav * stretch),
});

describe('the throughput limit from its passes', () => {
  it('drops the warm-up, takes the least on-CPU time of each stage, bounds over the cores', () => {
    const passes = [
      pass(900, 4000, 90), // cold: arenas, JIT
      pass(600, 1900, 30),
      pass(650, 3900, 28, 3), // the Talker's GC ran long, and other work took the core for two thirds of it
      pass(580, 2000, 31),
    ];
    const l = summarizeThroughput(10, 100, passes, 1, 2);
    expect([l.thinker_ms, l.talker_ms, l.code2wav_ms]).toEqual([580, 1900, 28]);
    expect(l.median).toEqual({ thinker_ms: 600, talker_ms: 2000, code2wav_ms: 30 });
    expect(l.wall_median).toEqual({ thinker_ms: 900, talker_ms: 3000, code2wav_ms: 46.5 });
    expect([l.repeats, l.warmup]).toEqual([3, 1]);
    // The Talker bounds it: its time is more than the sum over 2 cores.
    expect(l.bound_ms).toBe(1900);
    expect(l.pass_bounds_ms).toEqual([1900, 3900, 2000]);
    expect(l.batched_rps).toBeCloseTo(10 / 1.9, 9);
    expect([l.limit_rps, l.best_batch]).toEqual([l.batched_rps, 10]);
    // On one core the sum bounds it.
    expect(summarizeThroughput(10, 100, passes, 1, 1).bound_ms).toBe(580 + 1900 + 28);
  });

  it('refuses a limit with no measured pass', () => {
    expect(() => summarizeThroughput(1, 100, [pass(1, 1, 1)], 1, 2)).toThrow(/at least one measured pass/);
  });

  it('never puts the limit at c below the limit of a smaller measured batch', () => {
    const at = (batch: number, talkerMs: number) => summarizeThroughput(batch, 100, [pass(1, talkerMs, 1)], 0, 2);
    // batch 1: 5 req/s; batch 4: 8 req/s; batch 10: 5.4 req/s (a larger batch can cost more per request on a CPU).
    const limits = throughputEnvelope([at(10, 1850), at(1, 200), at(4, 500)]);
    expect(limits.map((l) => [l.batch, l.best_batch])).toEqual([
      [1, 1],
      [4, 4],
      [10, 4],
    ]);
    expect(limits.map((l) => l.limit_rps)).toEqual([5, 8, 8]);
    expect(limits[2].batched_rps).toBeCloseTo(10 / 1.85, 9);
  });
});
