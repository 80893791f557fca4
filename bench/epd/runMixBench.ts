/**
 * `chorus bench --mix ... --router ttft,least_loaded --config configs/epd.yaml`: the mixed workload (mixWorkload.ts)
 * against the config once per router, each on a fresh deployment (its own redis-server and `chorus stage` processes,
 * as on several hosts: bench/ttfp/RemoteStageHost.ts), in one run. Per router: TTFT p50/p99 per modality and
 * overall (engine level: from generate() to the first text token), the encoder cache hit rate, the encoders' busy
 * time (CPU seconds of their processes).
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Engine, GenerateRequest, Logger, Orchestrator, OutputEvent, RequestHandle } from '../../src/index.ts';
import {
  channelNames,
  CLOCK_TICKS_PER_SECOND,
  cpuTicksOf,
  encoderStatsOf,
  type RoutingPolicy,
} from '../../src/basics.ts';
import { nearestRank } from '../common.ts';
import { pngBytes, wavBytes } from '../mediaSamples.ts';
import { readBenchConfig, startInProcessServer } from '../ttfp/inProcessServer.ts';
import { mixWorkload, videoFrames, type Mix, type MixKind, type MixRequest } from './mixWorkload.ts';

export interface MixBenchOptions {
  readonly config: string;
  readonly routers: readonly RoutingPolicy[];
  readonly mix: Mix;
  readonly numRequests: number;
  readonly ratePerSecond: number;
  readonly repeatShare: number;
  readonly maxTokens: number;
  readonly seed: number;
  readonly log: Logger;
}

export interface Quantiles {
  readonly n: number;
  readonly p50_ms: number | null;
  readonly p99_ms: number | null;
}

export interface HitCounts {
  readonly hits: number;
  readonly misses: number;
}

export interface MixRun {
  readonly router: RoutingPolicy;
  readonly completed: number;
  readonly failed: number;
  readonly duration_s: number;
  readonly ttft: Record<MixKind | 'overall', Quantiles>;
  readonly text_ttft_p99_ms: number | null;
  /** Items the encoder-output store had (local or remote) and had not, over the run (all 0 without a store). */
  readonly ec_store: HitCounts;
  /** Hits / (hits + misses) of ec_store; null without a store. */
  readonly ec_hit_rate: number | null;
  /** Items that reached an encoder and hit, or missed, its own cache of rows. */
  readonly encoder_cache: HitCounts;
  /** CPU seconds the encoder processes used over the run, per instance. */
  readonly encoder_busy_s: Record<string, number>;
  /** Every request of the run (written to requests.json, not results.json). */
  readonly requests: readonly MixRequestDetail[];
}

export interface MixRequestDetail {
  readonly index: number;
  readonly kind: MixKind;
  readonly size: number;
  readonly repeat: boolean;
  readonly at_ms: number;
  readonly ttft_ms: number;
}

function quantiles(samples: readonly number[]): Quantiles {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (s.length === 0 ? null : nearestRank(s, q * 100));
  return { n: s.length, p50_ms: at(0.5), p99_ms: at(0.99) };
}

/** Resolves with the TTFT (ms from `sentAtMs`), or rejects with the request's error. */
function firstText(handle: RequestHandle, sentAtMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let ttftMs = NaN;
    handle.events.subscribe({
      next: (e: OutputEvent) => {
        if (e.type === 'text' && Number.isNaN(ttftMs)) ttftMs = e.atMs - sentAtMs;
        if (e.type !== 'done') return;
        if (e.finishReason === 'error') reject(new Error(`${e.error?.code}: ${e.error?.message}`));
        else resolve(ttftMs);
      },
    });
  });
}

function request(r: Pick<MixRequest, 'text' | 'media'>, maxTokens: number): GenerateRequest {
  return {
    messages: [{ role: 'user', content: r.media ? [{ type: 'text', text: r.text }, r.media] : r.text }],
    modalities: ['text'],
    sampling: { maxTokens, ignoreEos: true },
  };
}

/**
 * Sends each request of the workload at its time from now and waits for all of them; `onDone` gets its
 * time to first text (ms), `onFailed` its error.
 */
async function sendAll(
  engine: Engine,
  workload: readonly MixRequest[],
  maxTokens: number,
  on: {
    onDone?: (r: MixRequest, ttftMs: number) => void;
    onFailed: (r: MixRequest, err: unknown) => void;
  },
): Promise<number> {
  const startMs = Date.now();
  await Promise.all(
    workload.map(async (r) => {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, startMs + r.atMs - Date.now())));
      const sentAtMs = Date.now();
      try {
        on.onDone?.(r, await firstText(engine.generate(request(r, maxTokens)), sentAtMs));
      } catch (err) {
        on.onFailed(r, err);
      }
    }),
  );
  return startMs;
}

/** The encoder-output store's lookups while it runs (chorus:ec:lookup). */
function ecLookups(): { counts: { hits: number; misses: number }; stop: () => void } {
  const counts = { hits: 0, misses: 0 };
  const on = (m: unknown) => {
    const where = (m as { where?: string }).where;
    if (where === 'miss') counts.misses++;
    else if (where === 'local' || where === 'remote') counts.hits++;
  };
  subscribe(channelNames.ecLookup, on);
  return { counts, stop: () => unsubscribe(channelNames.ecLookup, on) };
}

/** Encoder cache totals per instance, from the stats the stages report. */
function encoderTotals(): { totals: Map<string, { hits: number; misses: number }>; stop: () => void } {
  const totals = new Map<string, { hits: number; misses: number }>();
  const on = (m: unknown) => {
    const s = m as { instance?: string; kind?: unknown };
    const { encoder } = encoderStatsOf(s);
    if (s.instance && encoder) totals.set(s.instance, { hits: encoder.cacheHits, misses: encoder.cacheMisses });
  };
  subscribe(channelNames.stageStats, on);
  return { totals, stop: () => unsubscribe(channelNames.stageStats, on) };
}

const rate = (c: HitCounts) => (c.hits + c.misses > 0 ? Number((c.hits / (c.hits + c.misses)).toFixed(3)) : null);

function encoderCpu(engine: Orchestrator): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of engine.health())
    if (h.stageId.endsWith('encoder') && h.pid !== null && h.instance)
      out.set(h.instance, cpuTicksOf(h.pid) ?? Number.NaN);
  return out;
}

async function runOne(router: RoutingPolicy, o: MixBenchOptions, workload: MixRequest[]): Promise<MixRun> {
  // Remote instances join a deployment of the same file only: each router gets a copy of the YAML of its own.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'chorus-mix-'));
  try {
    const file = path.join(dir, path.basename(o.config));
    const yaml = (await readFile(o.config, 'utf8')).replace(/^routing:.*$/m, '');
    await writeFile(file, `routing: ${router}\n${yaml}`);
    const config = await readBenchConfig(file);
    const server = await startInProcessServer(config.graph, o.log);
    try {
      await warmUp(server.engine, o);
      return await measureRun(router, server.engine, o, workload);
    } finally {
      await server.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** One request of each kind on media of its own (the workload's items must not be cached by it), then a short run. */
async function warmUp(engine: Orchestrator, o: MixBenchOptions): Promise<void> {
  const warm: Pick<MixRequest, 'text' | 'media'>[] = [
    { text: 'warm up', media: null },
    { text: 'warm up', media: { type: 'image', data: pngBytes(224, 224, 9_999) } },
    { text: 'warm up', media: { type: 'audio', data: wavBytes(5, 24_000, 9_999), format: 'wav' } },
    ...(o.mix.video > 0 ? [{ text: 'warm up', media: videoFrames(8, 9_999) }] : []),
  ];
  for (const r of warm) await firstText(engine.generate(request(r, o.maxTokens)), Date.now());
  // Then a short run of the same mix at the same rate, on other bytes: main's JIT, the stages and the ttft
  // router's learned rates meet the load before it counts. With the three requests above only, whichever
  // router ran first was measured cold (bench/README.md "Warm-up at the measured load").
  const warmRun = mixWorkload({ ...o, numRequests: Math.max(20, Math.round(o.numRequests / 5)), seed: o.seed + 1 });
  await sendAll(engine, warmRun, o.maxTokens, { onFailed: () => {} });
}

/** The encoders' cache hits and misses between two snapshots of their totals. */
function cacheDelta(before: Map<string, HitCounts>, after: Map<string, HitCounts>): HitCounts {
  let hits = 0;
  let misses = 0;
  for (const [instance, t] of after) {
    const b = before.get(instance) ?? { hits: 0, misses: 0 };
    hits += t.hits - b.hits;
    misses += t.misses - b.misses;
  }
  return { hits, misses };
}

/** The workload on a warmed deployment, with the encoders' counters read around it. */
async function measureRun(
  router: RoutingPolicy,
  engine: Orchestrator,
  o: MixBenchOptions,
  workload: MixRequest[],
): Promise<MixRun> {
  const cache = encoderTotals();
  const cpuBefore = encoderCpu(engine);
  await new Promise((resolve) => setTimeout(resolve, 1_200)); // a stats report after the warm-up
  const cacheBefore = new Map(cache.totals);
  const lookups = ecLookups();
  const ttfts = new Map<MixKind | 'overall', number[]>(
    (['overall', 'text', 'image', 'audio', 'video'] as const).map((k) => [k, []]),
  );
  let failed = 0;
  const details: MixRequestDetail[] = [];
  const startMs = await sendAll(engine, workload, o.maxTokens, {
    onDone: (r, ms) => {
      details.push({ index: r.index, kind: r.kind, size: r.size, repeat: r.repeat, at_ms: r.atMs, ttft_ms: ms });
      ttfts.get(r.kind)!.push(ms);
      ttfts.get('overall')!.push(ms);
    },
    onFailed: (r, err) => {
      failed++;
      o.log.warn({ index: r.index, kind: r.kind, err: String(err) }, 'a mix request failed');
    },
  });
  const durationS = (Date.now() - startMs) / 1000;
  await new Promise((resolve) => setTimeout(resolve, 1_200)); // the encoders' last stats
  cache.stop();
  lookups.stop();
  const store = lookups.counts;
  const busy: Record<string, number> = {};
  for (const [instance, after] of encoderCpu(engine))
    busy[instance] = Number(((after - (cpuBefore.get(instance) ?? 0)) / CLOCK_TICKS_PER_SECOND).toFixed(2));
  const ttft = Object.fromEntries([...ttfts].map(([k, v]) => [k, quantiles(v)])) as MixRun['ttft'];
  return {
    router,
    completed: workload.length - failed,
    failed,
    duration_s: Number(durationS.toFixed(2)),
    ttft,
    text_ttft_p99_ms: ttft.text.p99_ms,
    ec_store: { ...store },
    ec_hit_rate: rate(store),
    encoder_cache: cacheDelta(cacheBefore, cache.totals),
    encoder_busy_s: busy,
    requests: details.sort((a, b) => a.index - b.index),
  };
}

export interface MixBenchResult {
  readonly options: Omit<MixBenchOptions, 'log'>;
  readonly workload: { readonly requests: Record<MixKind, number>; readonly repeats: number };
  readonly runs: readonly MixRun[];
  /** The 1-minute load average at the start and the end (other processes show up in the figures). */
  readonly load_1m: { readonly start: number; readonly end: number };
  /** text_ttft_p99_ms per router. */
  readonly text_ttft_p99_ms: Partial<Record<RoutingPolicy, number | null>>;
}

export async function runMixBench(o: MixBenchOptions): Promise<MixBenchResult> {
  const loadAtStart = os.loadavg()[0];
  const workload = mixWorkload(o);
  const runs: MixRun[] = [];
  for (const router of o.routers) runs.push(await runOne(router, o, workload));
  const count = (k: MixKind) => workload.filter((w) => w.kind === k).length;
  const { log: _log, ...options } = o;
  return {
    options,
    workload: {
      requests: { text: count('text'), image: count('image'), audio: count('audio'), video: count('video') },
      repeats: workload.filter((w) => w.repeat).length,
    },
    runs,
    load_1m: { start: loadAtStart, end: os.loadavg()[0] },
    text_ttft_p99_ms: Object.fromEntries(runs.map((r) => [r.router, r.text_ttft_p99_ms])),
  };
}
