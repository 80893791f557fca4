/**
 * Prometheus metrics, in Chorus' own Registry (never prom-client's global one, so embedding Chorus in another
 * service does not mix metric sets). Every name starts with `chorus_`.
 *
 * This registry is the process's: its default metrics, the front end's (serverMetrics) and the engine's events
 * (edges, routing, media, the EC store, migrations). Engine numbers arrive two ways, both cheap: the observe*
 * functions below (this module imports nothing but prom-client and node:diagnostics_channel, so any layer may call
 * them), and bridgeEngineDiagnostics(), which maps the Orchestrator's diagnostics_channel events (chorus:edge:chunk,
 * chorus:route:decision...) onto the same metrics, so the engine never has to import the server. What each stage
 * instance reports of itself is each server's own registry (stageMetrics.ts); /metrics serves both.
 */
import { subscribe } from 'node:diagnostics_channel';
import { channelNames } from '../../common/diagnostics.ts';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { declareMetrics } from './declareMetrics.ts';
import { isMetricNumber } from './metricValue.ts';
import { engineMetricsIn } from './engineMetrics.ts';
import { latencyMetricsIn } from './latencyMetrics.ts';
import { migrationMetrics } from './migrationMetrics.ts';

export const metricsRegistry = new Registry();
/**
 * prom-client samples the event loop's delay with a timer of this period (its default, 10 ms, woke an idle server ~100
 * times a second, on a machine whose cores the stages need). At 50 ms a 15 s scrape still holds ~300 samples and every
 * stall of 50 ms or more is seen; the *_lag_{min,mean,p50,...} gauges read the period plus the lag (idle: ~0.05 s).
 */
const eventLoopSamplingMs = 50;
collectDefaultMetrics({
  register: metricsRegistry,
  prefix: 'chorus_process_',
  eventLoopMonitoringPrecision: eventLoopSamplingMs,
});
// prom-client's three sums of active handles, requests and resources are gauges named like counters (`_total`), which
// `promtool check metrics` rejects and PromQL's rate() would be misapplied to; their per-type gauges stay
// (chorus_process_nodejs_active_handles{type}: sum() of them is the total).
for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
  metricsRegistry.removeSingleMetric(`chorus_process_nodejs_${name}`);
const onRequestMigrated = migrationMetrics(metricsRegistry);

const latencyBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * What the front end measures, as a client would see it (from request arrival to the bytes being sent). TTFT, TTFP
 * and end to end carry trace-id exemplars (latencyMetrics.ts).
 */
export const serverMetrics = {
  ...latencyMetricsIn(metricsRegistry, latencyBucketsSeconds),
  ...declareMetrics(metricsRegistry, {
    voiceTtfpSeconds: {
      histogram: 'chorus_voice_ttfp_seconds',
      help:
        'Voice turns (server_vad): time from speech_stopped (the turn detected as ended, silence_duration_ms after ' +
        'the last speech) to the first audio packet of the automatic answer sent to the client.',
      buckets: latencyBucketsSeconds,
    },
    voiceSpeculativeAnswersTotal: {
      counter: 'chorus_voice_speculative_answers_total',
      help:
        'Voice turns: answers started when the VAD first heard silence and held until speech_stopped. result: ' +
        'started; confirmed (speech_stopped came and the held answer was sent); discarded (the user went on, or the ' +
        'turn changed, and nothing of it reached the client).',
      labels: ['result'],
    },
    interTokenSeconds: {
      histogram: 'chorus_inter_token_seconds',
      help: 'Time between consecutive text deltas sent to the client.',
      labels: ['protocol'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    },
    queueDepth: {
      gauge: 'chorus_queue_depth',
      help: 'Requests waiting for a slot in the engine (admission queue).',
    },
    queueWaitSeconds: {
      histogram: 'chorus_queue_wait_seconds',
      help: 'Time a request waited for a slot before it started (0 when one was free).',
      buckets: [0, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    },
    latencyRefusals: {
      counter: 'chorus_latency_refusals_total',
      help:
        'Requests refused (429) because the estimate said they would start or first answer later than the ' +
        "graph's admission bounds (max_queue_ms, slo_ttfp_ms).",
    },
    activeSessions: {
      gauge: 'chorus_active_sessions',
      help: 'Open realtime sessions and in-flight HTTP completions.',
      labels: ['protocol'],
    },
    responsesTotal: {
      counter: 'chorus_responses_total',
      help: 'Finished responses by protocol and outcome.',
      labels: ['protocol', 'status'],
    },
    errorsTotal: {
      counter: 'chorus_errors_total',
      help: 'Errors returned to clients, by stable error code.',
      labels: ['code'],
    },
    videoDecodesTotal: {
      counter: 'chorus_video_decodes_total',
      help:
        'Clips a request brought, by how main got their frames: decoded (a child ffmpeg) or kept (the same clip ' +
        'decoded the same way before, held within encoder.video.decoded_cache_bytes).',
      labels: ['result'],
    },
    streamPausesTotal: {
      counter: 'chorus_stream_pauses_total',
      help: 'Times a request was paused because its client read too slowly.',
      labels: ['protocol'],
    },
  }),
};

/** What the engine reports (engineMetrics.ts). */
export const engineMetrics = engineMetricsIn(metricsRegistry);

/** Takes numbers that came from stage processes: a non-finite one is no sample (metricValue.ts). */
export function observeEdgeChunk(fromStageId: string, toStageId: string, latencyMs: number, bytes: number): void {
  if (!isMetricNumber(latencyMs) || !isMetricNumber(bytes)) return;
  const edge = `${fromStageId}->${toStageId}`;
  engineMetrics.edgeChunkLatencySeconds.observe({ edge }, latencyMs / 1000);
  engineMetrics.edgeChunkBytes.observe({ edge }, bytes);
}

export function countClientError(code: string): void {
  serverMetrics.errorsTotal.inc({ code });
}

interface EdgeSampleMessage {
  readonly from?: unknown;
  readonly to?: unknown;
  readonly latencyMs?: unknown;
  readonly bytes?: unknown;
}

function observeEdgeSample(sample: EdgeSampleMessage): void {
  const { from, to, latencyMs, bytes } = sample;
  if (typeof from === 'string' && typeof to === 'string' && isMetricNumber(latencyMs) && isMetricNumber(bytes)) {
    observeEdgeChunk(from, to, latencyMs, bytes);
  }
}

/** The edge samples of a stage's stats report (its instance's own figures are each server's: stageMetrics.ts). */
function onStageStats(message: unknown): void {
  const samples = (message as { edgeSamples?: unknown }).edgeSamples;
  if (Array.isArray(samples)) for (const e of samples) observeEdgeSample(e as EdgeSampleMessage);
}

let bridged = false;

/** Subscribes the metrics to the engine's diagnostics_channel events (once per process). */
export function bridgeEngineDiagnostics(): void {
  if (bridged) return;
  bridged = true;
  subscribe(channelNames.stageStats, onStageStats);
  subscribe(channelNames.edgeChunk, (message) => observeEdgeSample(message as EdgeSampleMessage));
  subscribe(channelNames.requestMigrated, onRequestMigrated);
  subscribe(channelNames.audioSlack, (message) => {
    const slackMs = (message as { slackMs?: unknown }).slackMs;
    if (isMetricNumber(slackMs)) engineMetrics.playbackSlackSeconds.observe(slackMs / 1000);
  });
  subscribe(channelNames.routeDecision, (message) => {
    const { policy, reason, cachedPositions } = message as Record<string, unknown>;
    if (typeof policy !== 'string' || typeof reason !== 'string') return;
    engineMetrics.routeDecisions.inc({ policy, reason });
    if (isMetricNumber(cachedPositions)) engineMetrics.routeCachedPositions.observe({ policy }, cachedPositions);
  });
  subscribe(channelNames.routeTtft, (message) => {
    const { modality, predictedSeconds, actualSeconds } = message as Record<string, unknown>;
    if (typeof modality === 'string' && isMetricNumber(predictedSeconds) && isMetricNumber(actualSeconds))
      engineMetrics.routeTtftError.observe({ modality }, actualSeconds - predictedSeconds);
  });
  subscribe(channelNames.ecLookup, (message) => {
    const where = (message as { where?: unknown }).where;
    if (where === 'miss') engineMetrics.ecMisses.inc();
    else if (where === 'local' || where === 'remote') engineMetrics.ecHits.inc({ where });
  });
  subscribe(channelNames.mediaReencode, (message) => {
    const { reason, modality } = message as { reason?: unknown; modality?: unknown };
    if (typeof reason === 'string' && typeof modality === 'string')
      engineMetrics.mediaReencodes.inc({ reason, modality });
  });
  subscribe(channelNames.mediaEncodeSkipped, (message) => {
    const { modality } = message as { modality?: unknown };
    if (typeof modality === 'string') engineMetrics.mediaEncodesSkipped.inc({ modality });
  });
  subscribe(channelNames.encoderMedia, (message) => {
    const { stage, bytes } = message as { stage?: unknown; bytes?: unknown };
    if (typeof stage === 'string' && isMetricNumber(bytes) && bytes >= 0)
      engineMetrics.encoderMediaBytes.inc({ stage }, bytes);
  });
  subscribe(channelNames.cpuWakeupLatency, (message) => {
    const { held } = message as { held?: unknown };
    if (held === true) engineMetrics.cpuWakeupLatencyHolds.inc();
    else if (held === false) engineMetrics.cpuWakeupLatencyHolds.dec();
  });
  subscribe(channelNames.controlDropped, (message) => {
    const { channel, reason } = message as { channel?: unknown; reason?: unknown };
    if (typeof channel === 'string' && typeof reason === 'string')
      engineMetrics.controlMessagesDropped.inc({ channel, reason });
  });
  subscribe(channelNames.mediaRows, (message) => {
    const { event, instance, bytes } = message as Record<string, unknown>;
    if (event === 'wait') engineMetrics.mediaRowsWaits.inc();
    else if (event === 'refused') engineMetrics.mediaRowsRefusals.inc();
    else if (event === 'held' && typeof instance === 'string' && isMetricNumber(bytes))
      engineMetrics.mediaRowsHeldBytes.set({ stage: instance }, bytes);
  });
  subscribe(channelNames.ttfpTarget, (message) => {
    engineMetrics.ttfpTargets.inc({ result: (message as { met?: unknown }).met === true ? 'met' : 'missed' });
  });
}
