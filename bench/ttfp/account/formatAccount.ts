/**
 * The first-packet account in the reports: per mode at c=1, the mean ms of each named part in path order, the totals
 * by kind, and what is left unnamed; the same for a steady-state chunk's trip; and the slowest first packets, each
 * with the parts it spent beyond the mean (BenchResult.packet_accounts).
 */
import { ms, renderMarkdown, type Column } from '../../report/format.ts';
import type { BenchResult, PacketAccountRow } from '../results.ts';
import type { AccountSummary, SlowPacket } from './packetAccount.ts';

type PartRow = AccountSummary['parts'][number];

const partColumns = (total: number): Column<PartRow>[] => [
  { header: 'part', cell: (p) => p.name },
  { header: 'kind', cell: (p) => p.kind },
  { header: 'mean ms', cell: (p) => ms(p.ms) },
  { header: 'share', cell: (p) => `${((100 * p.ms) / total).toFixed(1)}%` },
  { header: 'per packet', cell: (p) => (p.steps === 1 ? '1' : p.steps.toFixed(1)) },
];

function heading(a: PacketAccountRow, what: string, s: AccountSummary): string {
  return (
    `${a.variant} c=${a.concurrency}, ${what}: ${s.requests} of ${a.measured} requests accounted, mean ` +
    `${ms(s.meanTotalMs)} ms, unnamed ${s.meanUnnamedMs.toFixed(3)} ms`
  );
}

function kindLine(s: AccountSummary): string {
  return `by kind: ${s.byKind.map((k) => `${k.kind} ${ms(k.ms)}`).join(', ')}`;
}

function summaries(a: PacketAccountRow): [string, AccountSummary][] {
  const all: [string, AccountSummary | null][] = [
    ['first packet (send -> first audio)', a.first_packet],
    ['a steady-state chunk (Talker hands it on -> client)', a.chunk_trip],
  ];
  return all.filter((x): x is [string, AccountSummary] => x[1] !== null);
}

/** A slow first packet's line: its time and the parts it spent beyond the mean, largest first. */
function slowLine(p: SlowPacket): string {
  const over = p.over.slice(0, 4).map((o) => `+${ms(o.excessMs)} ${o.name}`);
  return `- ${p.requestId} ${ms(p.totalMs)} ms: ${over.length > 0 ? over.join(', ') : 'no part 0.5 ms over its mean'}`;
}

/** The Markdown tables of the report (results.md and the terminal). */
export function accountMarkdown(r: BenchResult): string[] {
  const out: string[] = [];
  for (const a of r.packet_accounts ?? []) {
    for (const [what, s] of summaries(a))
      out.push('', `${heading(a, what, s)}; ${kindLine(s)}`, '', renderMarkdown(partColumns(s.meanTotalMs), s.parts));
    const slow = a.slowest_first ?? [];
    if (slow.length > 0)
      out.push('', `${a.variant} c=${a.concurrency}, its slowest first packets over the mean:`, ...slow.map(slowLine));
  }
  return out;
}
