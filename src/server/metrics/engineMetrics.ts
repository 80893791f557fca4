/**
 * The engine's metrics (edges, routing, encoders' media, the EC store, the control plane), made in the registry given:
 * what the engine reports through the diagnostics bridge in metrics.ts; and the stage instances' own (queue, batches,
 * encoder caches, Code2Wav), which each server makes in its registry (stageMetrics.ts). Labels: stage = the stage
 * instance ("talker#1"), edge = "<from>-><to>".
 */
import type { Registry } from 'prom-client';
import { declareMetrics, type MetricTable } from './declareMetrics.ts';

const ENGINE_METRICS = {
  // The edges between stages: chunk latency and size, playback.
  edgeChunkLatencySeconds: {
    histogram: 'chorus_edge_chunk_latency_seconds',
    help: 'Time from a chunk being saved by the producer stage to it being received by the consumer stage.',
    labels: ['edge'],
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  },
  edgeChunkBytes: {
    histogram: 'chorus_edge_chunk_bytes',
    help: 'Size of chunks crossing an edge, in bytes.',
    labels: ['edge'],
    buckets: [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216],
  },
  playbackSlackSeconds: {
    histogram: 'chorus_playback_slack_seconds',
    help:
      'Audio a listener still had buffered when each audio packet after the first was sent (audio sent before it ' +
      'minus time since the first packet); <= 0: the listener had run dry.',
    buckets: [-1, -0.25, -0.1, 0, 0.1, 0.25, 0.5, 1, 2, 5, 10],
  },
  ttfpTargets: {
    counter: 'chorus_ttfp_target_total',
    help: 'Requests with a TTFP target (ttfp_target_ms), by whether their first audio packet met it.',
    labels: ['result'],
  },
  // The router's decisions and how well it predicted.
  routeDecisions: {
    counter: 'chorus_route_decisions_total',
    help:
      'Requests routed, by policy (routing: ttft | least_loaded | round_robin) and why (ttft: shorter_queue, ' +
      'ec_local, kv_overlap, faster, unmeasured, single, pinned).',
    labels: ['policy', 'reason'],
  },
  routeCachedPositions: {
    histogram: 'chorus_route_cached_positions',
    help:
      "Prompt positions the chosen Thinker instance's prefix cache held for each routed request, as the router " +
      'counted them (KV-aware routing): the count is decisions, the sum positions routed to their cache.',
    labels: ['policy'],
    buckets: [0, 16, 64, 256, 1024, 4096, 16384],
  },
  routeTtftError: {
    histogram: 'chorus_route_ttft_error_seconds',
    help: 'Actual minus predicted time to first token of a routed request (negative: sooner than predicted).',
    labels: ['modality'],
    buckets: [-5, -1, -0.5, -0.25, -0.1, -0.05, -0.025, -0.01, 0, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
  },
  // Encoders' media, the encoder-output store and the Thinker's media-rows budget.
  encoderMediaBytes: {
    counter: 'chorus_encoder_media_bytes_total',
    help: 'Media bytes (as received) main sent to each encoder stage.',
    labels: ['stage'],
  },
  mediaRowsHeldBytes: {
    gauge: 'chorus_media_rows_held_bytes',
    help:
      "Encoded media rows counted against a Thinker instance's engine.media_rows_bytes: the rows of the requests " +
      'admitted to it, from their encode being planned until they end.',
    labels: ['stage'],
  },
  mediaRowsWaits: {
    counter: 'chorus_media_rows_waits_total',
    help: 'Requests that waited for room for their media rows (engine.media_rows_bytes) before admission.',
  },
  mediaRowsRefusals: {
    counter: 'chorus_media_rows_refusals_total',
    help:
      'Requests refused because their media rows alone exceed engine.media_rows_bytes ' +
      '(CHORUS_ERR_MEDIA_ROWS_BUDGET).',
  },
  ecHits: {
    counter: 'chorus_ec_hits_total',
    help:
      "Media items whose rows the encoder-output store had: taken from the Thinker instance's own copy (local) " +
      'or from Redis (remote); their bytes went to no encoder.',
    labels: ['where'],
  },
  mediaReencodes: {
    counter: 'chorus_media_reencodes_total',
    help:
      'Media items whose request main ran again to encode them again (docs/video.md), by reason (memory: the ' +
      "encode was over the encoder's memory; timeout: its rows were past the encoder's timeout_ms; lost: its " +
      'encoder-output store entry was gone; kv: its encode was skipped for KV its Thinker no longer held) and ' +
      'modality; a clip steps down its fallback for memory and timeout.',
    labels: ['reason', 'modality'],
  },
  mediaEncodesSkipped: {
    counter: 'chorus_media_encodes_skipped_total',
    help:
      "Media items sent to no encoder because the chosen Thinker's prefix cache held the KV of all their positions " +
      '(as main knew it; a wrong guess is encoded after all: chorus_media_reencodes_total{reason="kv"}), by modality.',
    labels: ['modality'],
  },
  ecMisses: {
    counter: 'chorus_ec_misses_total',
    help: 'Media items the encoder-output store did not have (sent to an encoder).',
  },
  // The control plane's dropped messages.
  controlMessagesDropped: {
    counter: 'chorus_control_messages_dropped_total',
    help:
      'Control-plane messages main dropped unread (src/control/ControlGuard.ts), by channel kind (heartbeat, ' +
      'to_main, ipc) and reason (malformed, foreign, version, invalid: a value or field out of its schema, ' +
      'unknown: from an instance main does not know, fenced, oversize, handler_error). Remote stages log the ' +
      'ones they drop.',
    labels: ['channel', 'reason'],
  },
  cpuWakeupLatencyHolds: {
    gauge: 'chorus_cpu_wakeup_latency_holds',
    help:
      "Holds of the machine's CPU wake-up latency (cpu_wakeup_latency_us, /dev/cpu_dma_latency) this process's " +
      'engines have in force: 1 while requests are live and for a linger after; 0 when the setting is null or the ' +
      'file cannot be opened (the log says why, CHORUS_WARN_CPU_LATENCY_NOT_HELD).',
  },
} as const satisfies MetricTable;

export function engineMetricsIn(metricsRegistry: Registry) {
  return declareMetrics(metricsRegistry, ENGINE_METRICS);
}

/**
 * What each stage instance's own reports feed (its queue, its steps' batch sizes, its encoder cache, Code2Wav's frames
 * and states): a server's StageMetrics (stageMetrics.ts) makes them in its own registry, so that two engines in one
 * process, whose instances have the same names, never write the same series.
 */
const STAGE_METRICS = {
  stageQueueDepth: {
    gauge: 'chorus_stage_queue_depth',
    help: 'Requests waiting in a stage scheduler (not yet scheduled).',
    labels: ['stage'],
  },
  stageBatchSize: {
    histogram: 'chorus_stage_batch_size',
    help: 'Sequences per executed step of a stage.',
    labels: ['stage'],
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
  },
  encoderCacheHits: {
    counter: 'chorus_encoder_cache_hits_total',
    help: 'Media items an encoder stage served from its cache (no encoder run).',
    labels: ['stage'],
  },
  encoderCacheMisses: {
    counter: 'chorus_encoder_cache_misses_total',
    help: 'Media items an encoder stage had to encode (not in its cache).',
    labels: ['stage'],
  },
  encoderCacheEvictions: {
    counter: 'chorus_encoder_cache_evictions_total',
    help: 'Encoder cache entries evicted to make room within the byte budget.',
    labels: ['stage'],
  },
  encoderCacheBytes: {
    gauge: 'chorus_encoder_cache_bytes',
    help: 'Bytes an encoder stage cache holds now (ready rows and reservations for items being encoded).',
    labels: ['stage'],
  },
  code2wavFramesDecoded: {
    counter: 'chorus_code2wav_frames_decoded_total',
    help:
      'Codec frames a Code2Wav stage ran through its vocoder, left context decoded again included (over ' +
      'chorus_code2wav_audio_frames_total: the decode ratio, 1 for a stateful vocoder).',
    labels: ['stage'],
  },
  code2wavAudioFrames: {
    counter: 'chorus_code2wav_audio_frames_total',
    help: 'Codec frames of audio a Code2Wav stage sent.',
    labels: ['stage'],
  },
  code2wavStates: {
    gauge: 'chorus_code2wav_states',
    help: 'Requests whose vocoder state a Code2Wav stage holds now (a stateful vocoder; freed when they end).',
    labels: ['stage'],
  },
} as const satisfies MetricTable;

export function stageMetricsIn(registry: Registry) {
  return declareMetrics(registry, STAGE_METRICS);
}
