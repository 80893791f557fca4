/** Keeps the transport bench runnable (a tiny run of every transport); speed is not asserted here. */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatTransportTable } from '../../bench/transport/formatTransportTable.ts';
import { runTransportBench } from '../../bench/transport/runTransportBench.ts';

describe('transport bench', () => {
  it('measures shm, file-per-chunk and process.send between two processes and renders a ratio table', async () => {
    const result = await runTransportBench({
      latencyIterations: 20,
      fileLatencyIterations: 5,
      warmupIterations: 2,
      throughputFrames: 4,
      throughputFrameBytes: 64 * 1024,
    });
    expect(result.transports.map((t) => t.transport)).toEqual(['shm', 'file', 'ipc']);
    for (const t of result.transports) {
      expect(t.latency.iterations).toBe(t.transport === 'file' ? 5 : 20);
      expect(t.latency.oneWayP50Us).toBeGreaterThan(0);
      expect(t.latency.oneWayP99Us).toBeGreaterThanOrEqual(t.latency.oneWayP50Us);
      expect(t.throughput.mibPerSecond).toBeGreaterThan(0);
    }
    const table = formatTransportTable(result);
    expect(table).toMatch(/shm ring \(doorbell\)\s+\S+ (us|ms)\s+1\.0x/);
    expect(table).toContain('file per chunk');
    // Every ring and chunk file the bench made (named after this pid) is gone.
    const mine = [`chorus-${process.pid}-`, `chorus-bench-${process.pid}-`];
    const leftovers = readdirSync('/dev/shm').filter((f) => mine.some((prefix) => f.startsWith(prefix)));
    expect(leftovers).toEqual([]);
  });
});
