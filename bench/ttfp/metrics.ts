/**
 * Client-side metrics over recorded traces, with vLLM-Omni's `vllm bench serve --omni` definitions so the
 * numbers compare:
 *
 *   TTFT  first text delta - send            ITL   gaps between consecutive text deltas
 *   TPOT  mean ITL of one request            TTFP  first audio delta - send
 *   E2E   last event - send                  RTF   (last audio delta - send) / audio duration
 *
 * Underruns come from a simulated real-time player that starts playing at the first audio delta and plays
 * every delta back to back at its sample rate: whenever the next delta has not arrived by the time the
 * buffered audio runs out, the player stalls until it does. Stalls over UNDERRUN_THRESHOLD_MS are underruns
 * (a listener hears them); the worst stall and the total stall time (all stalls, however short) are kept too.
 *
 * Pure functions: no clock, no I/O.
 */
import type { RequestTrace } from './trace.ts';

/** A gap the listener hears. Shorter gaps are counted in total stall time only. */
const UNDERRUN_THRESHOLD_MS = 100;

export interface StallStats {
  /** Stalls longer than the threshold. */
  readonly underruns: number;
  readonly worstStallMs: number;
  /** Sum of every stall, however short. */
  readonly totalStallMs: number;
}

export interface RequestMetrics {
  readonly ttftMs: number | null;
  readonly ttfpMs: number | null;
  readonly e2eMs: number;
  readonly itlsMs: readonly number[];
  /** null with fewer than two text deltas (no gap to average). */
  readonly tpotMs: number | null;
  readonly audioSeconds: number;
  /** Audio in the first delta: the initial codec chunk the server chose, as heard. */
  readonly firstAudioMs: number | null;
  readonly rtf: number | null;
  readonly stalls: StallStats;
  readonly textDeltas: number;
}

export interface AudioArrival {
  readonly atMs: number;
  readonly durationMs: number;
}

/** Plays `chunks` (in arrival order) from the first one's arrival; see the file comment. */
export function simulatePlayer(chunks: readonly AudioArrival[], thresholdMs = UNDERRUN_THRESHOLD_MS): StallStats {
  let underruns = 0;
  let worstStallMs = 0;
  let totalStallMs = 0;
  let bufferedUntilMs: number | null = null; // when the audio received so far has finished playing
  for (const c of chunks) {
    if (bufferedUntilMs === null) {
      bufferedUntilMs = c.atMs + c.durationMs;
      continue;
    }
    const stallMs = c.atMs - bufferedUntilMs;
    if (stallMs > 0) {
      totalStallMs += stallMs;
      worstStallMs = Math.max(worstStallMs, stallMs);
      if (stallMs > thresholdMs) underruns++;
      bufferedUntilMs = c.atMs + c.durationMs;
    } else {
      bufferedUntilMs += c.durationMs;
    }
  }
  return { underruns, worstStallMs, totalStallMs };
}

/**
 * Time per output token after the first: the text's span over the tokens after the first when the usage says how
 * many (a delta may carry several: the Thinker sends a few tokens a message), else the deltas' mean gap (one token
 * each).
 */
function tpotOf(
  textTimes: readonly number[],
  textTokens: number | undefined,
  itlsMs: readonly number[],
): number | null {
  if (textTokens !== undefined && textTokens > 1 && textTimes.length > 1)
    return (textTimes[textTimes.length - 1] - textTimes[0]) / (textTokens - 1);
  return itlsMs.length > 0 ? mean(itlsMs) : null;
}

export function requestMetrics(trace: RequestTrace, thresholdMs = UNDERRUN_THRESHOLD_MS): RequestMetrics {
  const start = trace.startMs;
  const textTimes: number[] = [];
  const audio: AudioArrival[] = [];
  let audioSeconds = 0;
  let lastMs = start;
  for (const e of trace.events) {
    lastMs = Math.max(lastMs, e.atMs);
    if (e.type === 'text') textTimes.push(e.atMs);
    else if (e.type === 'audio' && e.samples > 0) {
      const seconds = e.samples / e.sampleRateHz;
      audioSeconds += seconds;
      audio.push({ atMs: e.atMs, durationMs: seconds * 1000 });
    }
  }
  const itlsMs: number[] = [];
  for (let i = 1; i < textTimes.length; i++) itlsMs.push(textTimes[i] - textTimes[i - 1]);
  const lastAudio = audio.at(-1);
  return {
    ttftMs: textTimes.length > 0 ? textTimes[0] - start : null,
    ttfpMs: audio.length > 0 ? audio[0].atMs - start : null,
    e2eMs: lastMs - start,
    itlsMs,
    tpotMs: tpotOf(textTimes, trace.textTokens, itlsMs),
    audioSeconds,
    firstAudioMs: audio.length > 0 ? audio[0].durationMs : null,
    rtf: lastAudio && audioSeconds > 0 ? (lastAudio.atMs - start) / (audioSeconds * 1000) : null,
    stalls: simulatePlayer(audio, thresholdMs),
    textDeltas: textTimes.length,
  };
}

export function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/**
 * The p-th percentile with linear interpolation between closest ranks (numpy's default, which vLLM's bench
 * uses), so p50 of [1, 2, 3, 4] is 2.5. NaN for no values.
 */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort(); // a typed array sorts numerically, without a comparator call
  const rank = (Math.min(100, Math.max(0, p)) / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo);
}

/** mean / p50 / p99 of one metric; null when no request produced it (e.g. TTFP of text-only runs). */
export interface Distribution {
  readonly mean: number | null;
  readonly p50: number | null;
  readonly p99: number | null;
}

export function distribution(values: readonly (number | null)[]): Distribution {
  const present = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (present.length === 0) return { mean: null, p50: null, p99: null };
  return { mean: mean(present), p50: percentile(present, 50), p99: percentile(present, 99) };
}

export interface RunMetrics {
  readonly completed: number;
  readonly failed: number;
  readonly errors: readonly string[];
  readonly ttft: Distribution;
  readonly tpot: Distribution;
  /** Over every gap of every request (pooled), as vLLM does. */
  readonly itl: Distribution;
  readonly ttfp: Distribution;
  readonly e2e: Distribution;
  readonly rtf: Distribution;
  readonly underruns: number;
  readonly requestsWithUnderruns: number;
  readonly worstStallMs: number;
  readonly totalStallMs: number;
  readonly audioSeconds: number;
  readonly firstAudio: Distribution;
  readonly textDeltas: number;
}

/** Aggregates one run. Failed requests are counted (and their errors kept, deduplicated) but not measured. */
export function summarizeRun(traces: readonly RequestTrace[], thresholdMs = UNDERRUN_THRESHOLD_MS): RunMetrics {
  const ok = traces.filter((t) => t.ok);
  const per = ok.map((t) => requestMetrics(t, thresholdMs));
  return {
    completed: ok.length,
    failed: traces.length - ok.length,
    errors: [...new Set(traces.filter((t) => !t.ok).map((t) => t.error ?? 'unknown error'))],
    ttft: distribution(per.map((m) => m.ttftMs)),
    tpot: distribution(per.map((m) => m.tpotMs)),
    itl: distribution(per.flatMap((m) => m.itlsMs)),
    ttfp: distribution(per.map((m) => m.ttfpMs)),
    e2e: distribution(per.map((m) => m.e2eMs)),
    rtf: distribution(per.map((m) => m.rtf)),
    underruns: per.reduce((n, m) => n + m.stalls.underruns, 0),
    requestsWithUnderruns: per.filter((m) => m.stalls.underruns > 0).length,
    worstStallMs: per.reduce((w, m) => Math.max(w, m.stalls.worstStallMs), 0),
    totalStallMs: per.reduce((n, m) => n + m.stalls.totalStallMs, 0),
    audioSeconds: per.reduce((n, m) => n + m.audioSeconds, 0),
    firstAudio: distribution(per.map((m) => m.firstAudioMs)),
    textDeltas: per.reduce((n, m) => n + m.textDeltas, 0),
  };
}

/** A slow first packet, named so that its trace can be found (docs/tracing.md). */
export interface SlowRequest {
  readonly request_id: string | null;
  readonly trace_id: string | null;
  readonly ttfp_ms: number;
}

/** The `count` completed requests with the latest first audio packet, slowest first. */
export function slowestByTtfp(traces: readonly RequestTrace[], count: number): SlowRequest[] {
  return traces
    .filter((t) => t.ok)
    .flatMap((t) => {
      const ttfpMs = requestMetrics(t).ttfpMs;
      return ttfpMs === null ? [] : [{ request_id: t.requestId ?? null, trace_id: t.traceId ?? null, ttfp_ms: ttfpMs }];
    })
    .sort((a, b) => b.ttfp_ms - a.ttfp_ms)
    .slice(0, count);
}
