/**
 * Open-loop load: each request leaves at its arrival time whether or not the earlier ones have finished (vLLM's
 * --request-rate). Clients come from a pool of idle connections (a chat keep-alive agent, a Realtime session, each
 * carrying one request at a time): an arrival takes an idle one or opens a new one, so the number of connections
 * follows the requests in flight. A client whose request failed is closed, not reused (a timed-out Realtime
 * session may still be draining its cancelled response; a refused upgrade never opened).
 *
 * Send times are kept against the run's start (each wait is to `start + dueMs`, never a chain of sleeps), so the
 * timer's lateness does not pile up; what lateness remains is recorded (OpenLoopRecord.dueMs against the trace's
 * startMs) and reported as the send lag.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchClient } from '../clients/BenchClient.ts';
import { loadRequest, type LoadShape } from '../runLoad.ts';
import type { RequestTrace } from '../trace.ts';
import type { OpenLoopRecord } from './openLoopStats.ts';

export interface OpenLoopOptions extends LoadShape {
  /** Ms from the start, ascending (arrivals.ts); request i sends loadRequest(o, i). */
  readonly arrivalsMs: readonly number[];
  /** Connections opened before the clock starts (so the first arrivals do not pay for their set-up). */
  readonly prewarm: number;
}

export async function runOpenLoop(o: OpenLoopOptions): Promise<OpenLoopRecord[]> {
  const idle: BenchClient[] = [];
  const open = new Set<BenchClient>();
  const opened = await Promise.allSettled(Array.from({ length: o.prewarm }, () => o.openClient()));
  for (const r of opened)
    if (r.status === 'fulfilled') {
      idle.push(r.value);
      open.add(r.value);
    }
  const records: OpenLoopRecord[] = new Array(o.arrivalsMs.length);
  const inFlight: Promise<void>[] = [];
  const originMs = performance.now();
  const one = async (i: number): Promise<void> => {
    const dueMs = o.arrivalsMs[i];
    let client = idle.pop();
    let trace: RequestTrace;
    const openingMs = performance.now();
    try {
      if (!client) {
        client = await o.openClient();
        open.add(client);
      }
      trace = await client.request(loadRequest(o, i));
    } catch (err) {
      // Opening the connection failed (a Realtime upgrade refused with 429, a server gone): the request's outcome.
      trace = { startMs: openingMs, events: [], ok: false, error: (err as Error).message };
    }
    const endMs = performance.now();
    records[i] = { dueMs, originMs, endMs, trace };
    o.onRequestDone?.(trace);
    if (!client) return;
    if (trace.ok) idle.push(client);
    else {
      open.delete(client);
      await client.close().catch(() => {});
    }
  };
  try {
    for (let i = 0; i < o.arrivalsMs.length; i++) {
      const waitMs = originMs + o.arrivalsMs[i] - performance.now();
      if (waitMs > 0) await sleep(waitMs);
      inFlight.push(one(i));
    }
    await Promise.all(inFlight);
  } finally {
    await Promise.all([...open].map((c) => c.close().catch(() => {})));
  }
  return records;
}
