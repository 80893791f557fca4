/**
 * Open-loop load (issue 31 item 1), the pure half: the seeded gamma arrival generator (vLLM's --burstiness), and
 * the per-rate accounting of refusals, latencies, underruns and goodput on hand-made request records.
 */
import { describe, expect, it } from 'vitest';
import { arrivalGapsMs, gammaSampler, planArrivals } from '../../bench/ttfp/openLoop/arrivals.ts';
import { formatOpenLoop } from '../../bench/ttfp/openLoop/formatOpenLoop.ts';
import type { OpenLoopResult } from '../../bench/ttfp/openLoop/runOpenLoopBench.ts';
import { isGood, isRefusal, openLoopRow, type OpenLoopRecord } from '../../bench/ttfp/openLoop/openLoopStats.ts';
import { seededRandom } from '../../bench/ttfp/prompts.ts';
import type { RequestTrace } from '../../bench/ttfp/trace.ts';

function draws(next: () => number, n: number): number[] {
  return Array.from({ length: n }, next);
}

function meanVar(xs: readonly number[]): [number, number] {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return [mean, xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1)];
}

describe('open-loop arrivals', () => {
  it('the same seed gives the same gaps; another seed other gaps', () => {
    const a = draws(arrivalGapsMs({ ratePerS: 5, burstiness: 1, seed: 7 }), 100);
    expect(draws(arrivalGapsMs({ ratePerS: 5, burstiness: 1, seed: 7 }), 100)).toEqual(a);
    expect(draws(arrivalGapsMs({ ratePerS: 5, burstiness: 1, seed: 8 }), 100)).not.toEqual(a);
    expect(a.every((g) => g > 0 && Number.isFinite(g))).toBe(true);
  });

  it.each([0.25, 0.5, 1, 2, 4])('burstiness %s: mean gap 1/R and variance 1/(B R^2) within a few per cent', (b) => {
    const ratePerS = 4;
    const gaps = draws(arrivalGapsMs({ ratePerS, burstiness: b, seed: 1 }), 200_000).map((g) => g / 1000);
    const [mean, variance] = meanVar(gaps);
    expect(mean).toBeCloseTo(1 / ratePerS, 2);
    expect(Math.abs(mean * ratePerS - 1)).toBeLessThan(0.02);
    expect(Math.abs(variance / (1 / (b * ratePerS ** 2)) - 1)).toBeLessThan(0.05);
  });

  it('burstiness 1 is the exponential: P(gap > t) = exp(-R t)', () => {
    const ratePerS = 2;
    const gaps = draws(arrivalGapsMs({ ratePerS, burstiness: 1, seed: 3 }), 100_000).map((g) => g / 1000);
    for (const t of [0.1, 0.5, 1, 2]) {
      const share = gaps.filter((g) => g > t).length / gaps.length;
      expect(Math.abs(share - Math.exp(-ratePerS * t))).toBeLessThan(0.01);
    }
  });

  it('gamma shapes below 1 keep their mean (the U^(1/shape) reduction)', () => {
    const [mean] = meanVar(draws(gammaSampler(0.3, seededRandom(5)), 200_000));
    expect(Math.abs(mean / 0.3 - 1)).toBeLessThan(0.03);
  });

  it('plans arrivals within a duration or exactly N of them, rising', () => {
    const byDuration = planArrivals({ ratePerS: 10, burstiness: 1, seed: 0, durationMs: 60_000 });
    expect(byDuration.windowMs).toBe(60_000);
    expect(Math.abs(byDuration.atMs.length / 600 - 1)).toBeLessThan(0.1);
    expect(byDuration.atMs.every((t, i) => t < 60_000 && (i === 0 || t >= byDuration.atMs[i - 1]))).toBe(true);
    const byCount = planArrivals({ ratePerS: 10, burstiness: 1, seed: 0, count: 25 });
    expect(byCount.atMs).toHaveLength(25);
    expect(byCount.windowMs).toBe(byCount.atMs[24]);
    // The same seed: the count plan is the duration plan's first 25 arrivals.
    expect(byCount.atMs).toEqual(byDuration.atMs.slice(0, 25));
  });

  it('refuses a rate or a burstiness that is not > 0', () => {
    expect(() => arrivalGapsMs({ ratePerS: 0, burstiness: 1, seed: 0 })).toThrow(/request rate must be > 0/);
    expect(() => arrivalGapsMs({ ratePerS: 1, burstiness: -1, seed: 0 })).toThrow(/burstiness must be > 0/);
  });
});

/** A completed request sent at `startMs`: first text at +10, audio from `ttfpMs` (a 100 ms packet, then more). */
function answered(startMs: number, ttfpMs: number, stallMs = 0): RequestTrace {
  const first = startMs + ttfpMs;
  return {
    startMs,
    ok: true,
    events: [
      { type: 'text', atMs: startMs + 10 },
      { type: 'audio', atMs: first, samples: 2400, sampleRateHz: 24_000 },
      // The second packet arrives when the first has played, plus the stall.
      { type: 'audio', atMs: first + 100 + stallMs, samples: 2400, sampleRateHz: 24_000 },
      { type: 'done', atMs: first + 200 + stallMs },
    ],
  };
}

function record(
  dueMs: number,
  trace: RequestTrace,
  endMs = trace.events.at(-1)?.atMs ?? trace.startMs,
): OpenLoopRecord {
  return { dueMs, originMs: 0, endMs, trace };
}

describe('open-loop accounting', () => {
  const refused = (startMs: number, error: string, answerMs: number): OpenLoopRecord =>
    record(startMs, { startMs, events: [], ok: false, error }, startMs + answerMs);
  const records: OpenLoopRecord[] = [
    record(0, answered(0, 50)), // good
    record(500, answered(500, 80)), // good without an SLO; over a 60 ms SLO
    record(1000, answered(1000, 40, 250)), // an underrun (250 ms stall)
    record(1500, answered(1500, 30, 20)), // a 20 ms stall: not an underrun
    refused(2000, 'HTTP 429: {"error":{"code":"rate_limit_exceeded"}}', 4),
    refused(2500, 'rate_limit_exceeded: the server is busy', 8),
    refused(3000, 'no response.done within 1000 ms', 1000), // a failure, not a refusal
    record(3500, answered(3500 + 12, 20)), // left 12 ms late
  ];
  const context = { variant: 'async', asyncChunk: true, ratePerS: 2, burstiness: 1, windowMs: 4000 };

  it('tells refusals from failures by what the server answered', () => {
    expect(isRefusal('HTTP 429: busy')).toBe(true);
    expect(isRefusal('rate_limit_exceeded: the server is busy')).toBe(true);
    expect(isRefusal('cannot open ws://x/v1/realtime: Unexpected server response: 429')).toBe(true);
    expect(isRefusal('HTTP 503: overloaded')).toBe(false);
    expect(isRefusal('no [DONE] within 5 ms')).toBe(false);
    expect(isRefusal(undefined)).toBe(false);
  });

  it('counts offered, admitted, refused and failed over the arrival window', () => {
    const row = openLoopRow(records, { ...context, sloTtfpMs: null });
    expect(row.num_requests).toBe(8);
    expect(row.offered_rps).toBe(2); // 8 over 4 s
    expect(row.refused).toBe(2);
    expect(row.refused_share).toBe(0.25);
    expect(row.admitted_rps).toBe(1.5);
    expect(row.failed).toBe(1);
    expect(row.errors).toEqual(['no response.done within 1000 ms']);
    expect(row.completed).toBe(5);
    expect(row.refusal_ms.p50).toBe(6);
    expect(row.refusal_ms.p99).toBeCloseTo(7.96);
    expect(row.send_lag_p99_ms).toBeCloseTo(11.16); // 12 ms for one of 8, 0 for the others
  });

  it('goodput without an SLO: completed requests with no underrun', () => {
    const row = openLoopRow(records, { ...context, sloTtfpMs: null });
    expect(row.requests_with_underruns).toBe(1);
    expect(row.underrun_share).toBe(0.2);
    expect(row.total_stall_ms).toBe(270);
    expect(row.good).toBe(4);
    expect(row.goodput_rps).toBe(1);
    expect(row.ttfp_ms.p50).toBe(40);
    expect(row.ttft_ms.p50).toBe(10);
    expect(row.ttfp_ms.p99).toBeGreaterThanOrEqual(row.ttfp_ms.p95!);
  });

  it('goodput with an SLO: the TTFP within it too', () => {
    const row = openLoopRow(records, { ...context, sloTtfpMs: 60 });
    expect(row.good).toBe(3); // 50, 30 and 20 ms; 80 ms is late, the underrun does not count
    expect(row.goodput_rps).toBe(0.75);
    expect(isGood(answered(0, 60), 60)).toBe(true);
    expect(isGood(answered(0, 61), 60)).toBe(false);
    const textOnly: RequestTrace = { startMs: 0, ok: true, events: [{ type: 'text', atMs: 5 }] };
    expect(isGood(textOnly, null)).toBe(true);
    expect(isGood(textOnly, 60)).toBe(false); // no first packet: no TTFP within the SLO
  });

  it('a rate where everything was refused has no latencies, and no underrun share', () => {
    const row = openLoopRow([refused(0, 'HTTP 429: busy', 3)], { ...context, sloTtfpMs: null });
    expect(row).toMatchObject({ completed: 0, refused: 1, refused_share: 1, good: 0, underrun_share: null });
    expect(row.ttfp_ms).toEqual({ p50: null, p95: null, p99: null });
  });
});

describe('open-loop report', () => {
  const row = (rate: number, variant = 'async') =>
    openLoopRow([record(0, answered(0, 40 * rate)), record(300, answered(300, 50 * rate))], {
      variant,
      asyncChunk: variant === 'async',
      ratePerS: rate,
      burstiness: 1,
      windowMs: 1000,
      sloTtfpMs: 100,
    });

  it('a table row per rate and server, every figure on it', () => {
    const result = {
      command: 'chorus bench --open-loop',
      started_at: '2026-12-02T10:00:00.000Z',
      git_sha: 'abcdef0123456',
      machine: { cpus: 2, cpu_model: 'x', load_avg_start: 1, load_avg_end: 2 },
      options: { protocol: 'realtime', burstiness: 1, duration_s: null, num_prompts: 2, input_len: 8 },
      rates: [row(2)],
    } as unknown as OpenLoopResult;
    const lines = formatOpenLoop(result).split('\n');
    const cellsOf = (l: string) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim());
    const at = lines.findIndex((l) => l.startsWith('| Server |'));
    const cell = Object.fromEntries(cellsOf(lines[at]).map((h, i) => [h, cellsOf(lines[at + 2])[i]]));
    expect(lines[at + 3]).toBe('');
    expect(cell).toMatchObject({
      Server: 'async',
      'Rate (req/s)': '2',
      'Offered / admitted (req/s)': '2.00 / 2.00',
      'Window / run (s)': '1.0 / 0.6',
      Refused: '0.0% (0)',
      'Refusal p50 / p99 (ms)': '- / -',
      'Completed / failed': '2 / 0',
      'TTFT p50 / p95 / p99 (ms)': '10.0 / 10.0 / 10.0',
      'TTFP p50 / p95 / p99 (ms)': '90.0 / 99.0 / 99.8',
      'Underrun share': '0.0% (0)',
      'Goodput (req/s)': '2.00',
    });
  });
});
