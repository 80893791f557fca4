/**
 * Renders a TransportBenchResult as a text table with the shm ring as the 1.0x reference.
 * Latency ratios read "times slower than shm"; throughput ratios read "fraction of shm's".
 */
import type { TransportBenchResult, TransportMeasurement } from './runTransportBench.ts';

/** The goals the bench reports against (never asserted in tests: a speed goal lives in a benchmark). */
export const GOALS = { shmP50MaxUs: 30, minSpeedupOverFile: 20 } as const;

function us(v: number): string {
  return v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(1)} us`;
}

function ratio(v: number): string {
  return `${v >= 10 ? v.toFixed(0) : v.toFixed(v >= 1 ? 1 : 2)}x`;
}

function throughput(mibPerSecond: number): string {
  return mibPerSecond >= 1024 ? `${(mibPerSecond / 1024).toFixed(2)} GiB/s` : `${mibPerSecond.toFixed(0)} MiB/s`;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
}

export function formatTransportTable(result: TransportBenchResult): string {
  const shm = result.transports.find((t) => t.transport === 'shm') ?? result.transports[0];
  if (shm === undefined) return '(no transports measured)';
  const first = result.transports[0] as TransportMeasurement;
  const header = [
    'transport',
    `p50 1-way ${first.latency.frameBytes / 1024} KB`,
    'vs shm',
    'p99 1-way',
    'vs shm',
    `${first.throughput.frameBytes / (1024 * 1024)} MiB frames`,
    'vs shm',
  ];
  const rows = result.transports.map((t) => [
    t.label,
    us(t.latency.oneWayP50Us),
    ratio(t.latency.oneWayP50Us / shm.latency.oneWayP50Us),
    us(t.latency.oneWayP99Us),
    ratio(t.latency.oneWayP99Us / shm.latency.oneWayP99Us),
    throughput(t.throughput.mibPerSecond),
    ratio(t.throughput.mibPerSecond / shm.throughput.mibPerSecond),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const lines = [pad(header, widths), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r) => pad(r, widths))];
  lines.push('', `latency: ${result.method}; ratios: latency = times slower than shm, throughput = share of shm's`);
  const file = result.transports.find((t) => t.transport === 'file');
  const p50 = shm.latency.oneWayP50Us;
  const goals = [`shm 4 KB p50 ${us(p50)} ${p50 <= GOALS.shmP50MaxUs ? '<=' : '>'} ${GOALS.shmP50MaxUs} us goal`];
  if (file !== undefined && shm.transport === 'shm') {
    const speedup = file.latency.oneWayP50Us / p50;
    goals.push(
      `${ratio(speedup)} faster than file-per-chunk (goal >= ${GOALS.minSpeedupOverFile}x: ` +
        `${speedup >= GOALS.minSpeedupOverFile ? 'met' : 'missed'})`,
    );
  }
  lines.push(`goals: ${goals.join('; ')}`);
  if (result.redis !== undefined) lines.push(`redis: ${result.redis}`);
  lines.push(`git ${result.gitSha}, node ${result.node}, ${result.cpuCount} x ${result.cpuModel}, ${result.startedAt}`);
  return lines.join('\n');
}
