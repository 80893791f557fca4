/**
 * The engine's metrics (stages, edges, routing, encoders, the EC store, Code2Wav, the control plane), made in the
 * registry given: what the engine reports through the diagnostics bridge in metrics.ts. Labels: stage = the stage
 * instance ("talker#1"), edge = "<from>-><to>".
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function engineMetricsIn(metricsRegistry: Registry) {
  return {
    ...stageMetricsIn(metricsRegistry),
    ...routingMetricsIn(metricsRegistry),
    ...mediaMetricsIn(metricsRegistry),
    ...code2wavAndControlMetricsIn(metricsRegistry),
  };
}

/** Stages and the edges between them: queue depth, batch size, chunk latency and size, playback. */
function stageMetricsIn(metricsRegistry: Registry) {
  return {
    stageQueueDepth: new Gauge({
      name: 'chorus_stage_queue_depth',
      help: 'Requests waiting in a stage scheduler (not yet scheduled).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    stageBatchSize: new Histogram({
      name: 'chorus_stage_batch_size',
      help: 'Sequences per executed step of a stage.',
      labelNames: ['stage'] as const,
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers: [metricsRegistry],
    }),
    edgeChunkLatencySeconds: new Histogram({
      name: 'chorus_edge_chunk_latency_seconds',
      help: 'Time from a chunk being saved by the producer stage to it being received by the consumer stage.',
      labelNames: ['edge'] as const,
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [metricsRegistry],
    }),
    edgeChunkBytes: new Histogram({
      name: 'chorus_edge_chunk_bytes',
      help: 'Size of chunks crossing an edge, in bytes.',
      labelNames: ['edge'] as const,
      buckets: [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216],
      registers: [metricsRegistry],
    }),
    playbackSlackSeconds: new Histogram({
      name: 'chorus_playback_slack_seconds',
      help:
        'Audio a listener still had buffered when each audio packet after the first was sent (audio sent before it ' +
        'minus time since the first packet); <= 0: the listener had run dry.',
      buckets: [-1, -0.25, -0.1, 0, 0.1, 0.25, 0.5, 1, 2, 5, 10],
      registers: [metricsRegistry],
    }),
    ttfpTargets: new Counter({
      name: 'chorus_ttfp_target_total',
      help: 'Requests with a TTFP target (ttfp_target_ms), by whether their first audio packet met it.',
      labelNames: ['result'] as const,
      registers: [metricsRegistry],
    }),
  };
}

/** The router's decisions and how well it predicted. */
function routingMetricsIn(metricsRegistry: Registry) {
  return {
    routeDecisions: new Counter({
      name: 'chorus_route_decisions_total',
      help:
        'Requests routed, by policy (routing: ttft | least_loaded | round_robin) and why (ttft: shorter_queue, ' +
        'ec_local, kv_overlap, faster, unmeasured, single, pinned).',
      labelNames: ['policy', 'reason'] as const,
      registers: [metricsRegistry],
    }),
    routeCachedPositions: new Histogram({
      name: 'chorus_route_cached_positions',
      help:
        "Prompt positions the chosen Thinker instance's prefix cache held for each routed request, as the router " +
        'counted them (KV-aware routing): the count is decisions, the sum positions routed to their cache.',
      labelNames: ['policy'] as const,
      buckets: [0, 16, 64, 256, 1024, 4096, 16384],
      registers: [metricsRegistry],
    }),
    routeTtftError: new Histogram({
      name: 'chorus_route_ttft_error_seconds',
      help: 'Actual minus predicted time to first token of a routed request (negative: sooner than predicted).',
      labelNames: ['modality'] as const,
      buckets: [-5, -1, -0.5, -0.25, -0.1, -0.05, -0.025, -0.01, 0, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [metricsRegistry],
    }),
  };
}

/** Encoders, their caches, the encoder-output store and the Thinker's media-rows budget. */
function mediaMetricsIn(metricsRegistry: Registry) {
  return {
    encoderCacheHits: new Counter({
      name: 'chorus_encoder_cache_hits_total',
      help: 'Media items an encoder stage served from its cache (no encoder run).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    encoderCacheMisses: new Counter({
      name: 'chorus_encoder_cache_misses_total',
      help: 'Media items an encoder stage had to encode (not in its cache).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    encoderCacheEvictions: new Counter({
      name: 'chorus_encoder_cache_evictions_total',
      help: 'Encoder cache entries evicted to make room within the byte budget.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    encoderCacheBytes: new Gauge({
      name: 'chorus_encoder_cache_bytes',
      help: 'Bytes an encoder stage cache holds now (ready rows and reservations for items being encoded).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    encoderMediaBytes: new Counter({
      name: 'chorus_encoder_media_bytes_total',
      help: 'Media bytes (as received) main sent to each encoder stage.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    mediaRowsHeldBytes: new Gauge({
      name: 'chorus_media_rows_held_bytes',
      help:
        "Encoded media rows counted against a Thinker instance's engine.media_rows_bytes: the rows of the requests " +
        'admitted to it, from their encode being planned until they end.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    mediaRowsWaits: new Counter({
      name: 'chorus_media_rows_waits_total',
      help: 'Requests that waited for room for their media rows (engine.media_rows_bytes) before admission.',
      registers: [metricsRegistry],
    }),
    mediaRowsRefusals: new Counter({
      name: 'chorus_media_rows_refusals_total',
      help:
        'Requests refused because their media rows alone exceed engine.media_rows_bytes ' +
        '(CHORUS_ERR_MEDIA_ROWS_BUDGET).',
      registers: [metricsRegistry],
    }),
    ecHits: new Counter({
      name: 'chorus_ec_hits_total',
      help:
        "Media items whose rows the encoder-output store had: taken from the Thinker instance's own copy (local) " +
        'or from Redis (remote); their bytes went to no encoder.',
      labelNames: ['where'] as const,
      registers: [metricsRegistry],
    }),
    ecMisses: new Counter({
      name: 'chorus_ec_misses_total',
      help: 'Media items the encoder-output store did not have (sent to an encoder).',
      registers: [metricsRegistry],
    }),
  };
}

/** Code2Wav's vocoder work and state, and the control plane's dropped messages. */
function code2wavAndControlMetricsIn(metricsRegistry: Registry) {
  return {
    code2wavFramesDecoded: new Counter({
      name: 'chorus_code2wav_frames_decoded_total',
      help:
        'Codec frames a Code2Wav stage ran through its vocoder, left context decoded again included (over ' +
        'chorus_code2wav_audio_frames_total: the decode ratio, 1 for a stateful vocoder).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    code2wavAudioFrames: new Counter({
      name: 'chorus_code2wav_audio_frames_total',
      help: 'Codec frames of audio a Code2Wav stage sent.',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    code2wavStates: new Gauge({
      name: 'chorus_code2wav_states',
      help: 'Requests whose vocoder state a Code2Wav stage holds now (a stateful vocoder; freed when they end).',
      labelNames: ['stage'] as const,
      registers: [metricsRegistry],
    }),
    controlMessagesDropped: new Counter({
      name: 'chorus_control_messages_dropped_total',
      help:
        'Control-plane messages main dropped unread (src/control/ControlGuard.ts), by channel kind (heartbeat, ' +
        'to_main, ipc) and reason (malformed, foreign, version, invalid: a value or field out of its schema, ' +
        'unknown: from an instance main does not know, fenced, oversize, handler_error). Remote stages log the ' +
        'ones they drop.',
      labelNames: ['channel', 'reason'] as const,
      registers: [metricsRegistry],
    }),
  };
}
