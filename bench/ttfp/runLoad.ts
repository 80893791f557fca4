/**
 * Closed-loop load at a fixed concurrency (vLLM's --max-concurrency with an unbounded request rate): every
 * slot sends its next prompt as soon as its previous answer has ended, until all prompts are sent.
 */
import { closedLoop } from '../common.ts';
import type { BenchClient, BenchRequest } from './clients/BenchClient.ts';
import type { RequestTrace } from './trace.ts';

/** What every load sends, closed or open loop: its prompts and how each request is made, its clients. */
export interface LoadShape {
  readonly prompts: readonly string[];
  readonly outputLen: number;
  /** Request i gets seed + i, so the same prompt index gets the same seed in every run. */
  readonly seed: number;
  readonly timeoutMs: number;
  /** Chorus extensions sent with every request (initial chunk, TTFP target). */
  readonly chunking?: Pick<BenchRequest, 'initialCodecChunkFrames' | 'ttfpTargetMs'>;
  /** Opens one client (a connection). */
  readonly openClient: () => Promise<BenchClient>;
  readonly onRequestDone?: (trace: RequestTrace) => void;
}

/** Request i of a load: prompt i (from the start again past the last), with seed + i. */
export function loadRequest(o: LoadShape, i: number): BenchRequest {
  const { outputLen, timeoutMs } = o;
  return { prompt: o.prompts[i % o.prompts.length], outputLen, seed: o.seed + i, timeoutMs, ...o.chunking };
}

/** A closed loop: its clients are opened once per slot before the clock starts. */
export interface LoadOptions extends LoadShape {
  readonly concurrency: number;
}

export interface LoadResult {
  /** In prompt order. */
  readonly traces: readonly RequestTrace[];
  /** From the first send to the last answer's end. */
  readonly durationMs: number;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const slots = Math.max(1, Math.min(o.concurrency, o.prompts.length));
  const clients = await Promise.all(Array.from({ length: slots }, () => o.openClient()));
  const traces: RequestTrace[] = new Array(o.prompts.length);
  const startedMs = performance.now();
  let endedMs = startedMs;
  try {
    await closedLoop(o.prompts.length, o.concurrency, async (i, slot) => {
      traces[i] = await clients[slot].request(loadRequest(o, i));
      o.onRequestDone?.(traces[i]);
    });
    endedMs = performance.now();
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  return { traces, durationMs: endedMs - startedMs };
}
