/**
 * Admission's measured bounds (issue 41 item 6), `admission: {max_queue_ms: measured, slo_ttfp_ms: measured}`: a YAML
 * without `admission:` gets the first (src/config/defaults.ts says why the second is opt-in), so the shipped
 * pipelines protect themselves without an operator's figure. A fixed
 * 1.5 s first-packet bound was tried and refused the test suite's own requests on the loaded 2-core CI machine (a
 * burst of ten grammar-constrained chats: first text estimated at 4.6-85 s, each answered in seconds), so the default
 * is derived from what the server measures, and bounds the queue, and the first packet of spoken answers only:
 *
 * - its base is what requests admitted alone took lately (the median first audio for a request that asks for audio,
 *   else first text; src/engine/routing/AloneTimes.ts): on a slow or loaded machine requests alone are slower too;
 * - the bound is MULTIPLE times that, at least FLOOR_MS, at most a third of chunk_policy.chunk_timeout_ms (an
 *   admitted request's first chunk must be far inside the timeout that would fail it with a 500);
 * - it bounds the estimated wait before a request's own work starts (the server's line, the Thinker's queue, a batch
 *   seat): a client that sends a few requests at a time, however slow each is, builds no queue and is never refused;
 *   an overload, which builds one, is refused at once with 429 + Retry-After.
 *
 * - `slo_ttfp_ms: measured` bounds the estimated first audio of a request that asks for audio by the same figure: the
 *   queue bound alone let an overload of spoken answers through (its cost is the decode steps every stage runs, not
 *   a line: admitted first audio p95 10.3 s at 4x capacity, most answers underrunning), and a newcomer beside
 *   sixteen long answers was admitted into seconds of wait. A text answer's first token is not bounded by it (the
 *   queue bound covers its line): grammar-constrained bursts in the suite were estimated at seconds and answered.
 *
 * - with it, a spoken answer is refused while the Talker's steps (one frame for each of its requests) take longer
 *   than a frame plays (`audioPace`, admissionDecision.ts): at 4x capacity on a loaded machine every admitted answer
 *   underran although their first audio was in time, and one more answer only slows every step further.
 *
 * Before anything is measured there is no bound (only the counts), as with an idle engine.
 */
import type { FirstOutputEstimate } from '../../common/engine.ts';
import type { AdmissionSettings, AdmissionSlo } from '../../common/graph.ts';

/** The bound is this many times what a request alone takes to its first packet. */
export const MEASURED_MULTIPLE = 4;
/** ... and never below this (ms): a tiny pipeline's 40 ms alone would otherwise refuse at every hiccup. */
export const MEASURED_FLOOR_MS = 1000;

export interface MeasuredContext {
  readonly wantsAudio: boolean;
  readonly chunkTimeoutMs: number;
}

/** The bounds for one request, `measured` resolved to a number, or to null (nothing measured yet). */
export function resolveSlo(
  settings: AdmissionSettings,
  engine: FirstOutputEstimate | null,
  o: MeasuredContext,
): AdmissionSlo {
  const maxQueueMs = settings.maxQueueMs === 'measured' ? measuredBoundMs(engine, o) : settings.maxQueueMs;
  if (settings.sloTtfpMs !== 'measured') return { maxQueueMs, sloTtfpMs: settings.sloTtfpMs };
  const sloTtfpMs = o.wantsAudio ? measuredBoundMs(engine, o) : null;
  return { maxQueueMs, sloTtfpMs, audioPace: sloTtfpMs !== null };
}

/** The measured queue bound (ms) for this request, or null before requests alone were measured. */
export function measuredBoundMs(engine: FirstOutputEstimate | null, o: MeasuredContext): number | null {
  const alone = engine?.aloneMs;
  if (!alone || alone.ttft === null) return null;
  const base = o.wantsAudio ? (alone.ttfp ?? alone.ttft) : alone.ttft;
  return Math.min(o.chunkTimeoutMs / 3, Math.max(MEASURED_FLOOR_MS, MEASURED_MULTIPLE * base));
}

/**
 * The bound admission's running limit holds a request's first packet to (ms; src/server/admission/RunningLimit.ts):
 * slo_ttfp_ms when it is a figure, else the measured bound when either bound is `measured` (the default); null with
 * `running_limit: fixed`, without such a bound, or before requests alone were measured.
 */
export function runningLimitBoundMs(
  settings: AdmissionSettings,
  engine: FirstOutputEstimate | null,
  o: MeasuredContext,
): number | null {
  if (settings.runningLimit === 'fixed') return null;
  if (typeof settings.sloTtfpMs === 'number') return settings.sloTtfpMs;
  if (settings.sloTtfpMs !== 'measured' && settings.maxQueueMs !== 'measured') return null;
  return measuredBoundMs(engine, o);
}
