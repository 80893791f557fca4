/**
 * The bench's side of the first-packet account: main's marks, heard on diagnostics_channel in the server's process
 * (src/common/packetMarks.ts; collected after each block, ../serverProcess.ts), the stage processes' step traces in
 * the bench's step-trace folder, and the client's times, turned into each c=1 request's account (packetAccount.ts)
 * and their means per mode.
 */
import { PERF_TO_MONOTONIC_MS, type PacketMark } from '../../../src/basics.ts';
import { readProcessTraces } from '../report/stepTraces.ts';
import type { PacketAccountRow } from '../results.ts';
import type { RequestTrace } from '../trace.ts';
import {
  chunkTripAccount,
  firstPacketAccount,
  slowestPackets,
  summarizeAccounts,
  type ClientTimes,
  type PacketAccount,
  type ProcessTrace,
} from './packetAccount.ts';

/** The client's times of a request on the monotonic clock (the client's are performance.now() in this process). */
export function clientTimesOf(t: RequestTrace): ClientTimes | null {
  if (!t.ok || t.requestId === undefined) return null;
  const audioAtMs = t.events.filter((e) => e.type === 'audio').map((e) => e.atMs + PERF_TO_MONOTONIC_MS);
  return { requestId: t.requestId, sentAtMs: t.startMs + PERF_TO_MONOTONIC_MS, audioAtMs };
}

/** The stage a chunk reached `last` from (the Talker for Code2Wav), from its input marks. */
function upstreamOf(processes: readonly ProcessTrace[], last: string): string | null {
  for (const p of processes) if (p.stage === last) for (const m of p.marks) if (m.m === 'in' && m.from) return m.from;
  return null;
}

/** The accounts of a run's requests: each one's first packet and its middle audio delta's trip. */
export function accountsOf(
  traces: readonly RequestTrace[],
  main: readonly PacketMark[],
  processes: readonly ProcessTrace[],
): { first: PacketAccount[]; chunk: PacketAccount[]; measured: number } {
  const first: PacketAccount[] = [];
  const chunk: PacketAccount[] = [];
  const clients = traces.map(clientTimesOf).filter((c): c is ClientTimes => c !== null);
  const last = main.find((m) => m.mark === 'delivered' && m.from !== undefined)?.from;
  const upstream = last ? upstreamOf(processes, last) : null;
  for (const c of clients) {
    const a = firstPacketAccount(c, main, processes);
    if (a) first.push(a);
    const k = Math.floor(c.audioAtMs.length / 2);
    const trip = upstream && k > 0 ? chunkTripAccount(c, k, upstream, main, processes) : null;
    if (trip) chunk.push(trip);
  }
  return { first, chunk, measured: clients.length };
}

/** The slowest first packets of a mode whose excess over the mean the report names. */
const SLOWEST_ACCOUNTED = 2;

/**
 * The account row of one mode's run: its traces, main's marks of them, the step traces in `stepTraceDir` (where the
 * stage processes write them: CHORUS_STEP_TRACE_DIR).
 */
export async function accountRow(
  stepTraceDir: string,
  run: { variant: string; concurrency: number; traces: readonly RequestTrace[]; marks: readonly PacketMark[] },
): Promise<PacketAccountRow> {
  const { first, chunk, measured } = accountsOf(run.traces, run.marks, await readProcessTraces(stepTraceDir));
  return {
    variant: run.variant,
    concurrency: run.concurrency,
    accounted: first.length,
    measured,
    first_packet: summarizeAccounts(first),
    chunk_trip: summarizeAccounts(chunk),
    slowest_first: slowestPackets(first, SLOWEST_ACCOUNTED),
  };
}
