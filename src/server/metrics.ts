/**
 * Prometheus metrics, in Chorus' own Registry (never prom-client's global one, so embedding Chorus in another
 * service does not mix metric sets). Every name starts with `chorus_`.
 *
 * This module imports nothing but prom-client: the engine imports the report* functions below to publish
 * per-stage queue depth, batch size and per-edge chunk latency/bytes without depending on the server.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'chorus_process_' });

const latencyBucketsSeconds = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What the front end measures, as a client would see it (from request arrival to the bytes being sent). */
export const serverMetrics = {
  ttftSeconds: new Histogram({
    name: 'chorus_ttft_seconds',
    help: 'Time from request arrival to the first text delta sent to the client.',
    labelNames: ['protocol'] as const,
    buckets: latencyBucketsSeconds,
    registers: [metricsRegistry],
  }),
  ttfpSeconds: new Histogram({
    name: 'chorus_ttfp_seconds',
    help: 'Time from request arrival to the first audio packet sent to the client.',
    labelNames: ['protocol'] as const,
    buckets: latencyBucketsSeconds,
    registers: [metricsRegistry],
  }),
  interTokenSeconds: new Histogram({
    name: 'chorus_inter_token_seconds',
    help: 'Time between consecutive text deltas sent to the client.',
    labelNames: ['protocol'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    registers: [metricsRegistry],
  }),
  activeSessions: new Gauge({
    name: 'chorus_active_sessions',
    help: 'Open realtime sessions and in-flight HTTP completions.',
    labelNames: ['protocol'] as const,
    registers: [metricsRegistry],
  }),
  responsesTotal: new Counter({
    name: 'chorus_responses_total',
    help: 'Finished responses by protocol and outcome.',
    labelNames: ['protocol', 'status'] as const,
    registers: [metricsRegistry],
  }),
  errorsTotal: new Counter({
    name: 'chorus_errors_total',
    help: 'Errors returned to clients, by stable error code.',
    labelNames: ['code'] as const,
    registers: [metricsRegistry],
  }),
  streamPausesTotal: new Counter({
    name: 'chorus_stream_pauses_total',
    help: 'Times a request was paused because its client read too slowly.',
    labelNames: ['protocol'] as const,
    registers: [metricsRegistry],
  }),
};

/** What the engine reports. Labels: stage = stage id, edge = "<from>-><to>". */
export const engineMetrics = {
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
};

export function reportStageQueueDepth(stageId: string, depth: number): void {
  engineMetrics.stageQueueDepth.set({ stage: stageId }, depth);
}

export function observeStageBatch(stageId: string, numSeqs: number): void {
  engineMetrics.stageBatchSize.observe({ stage: stageId }, numSeqs);
}

export function observeEdgeChunk(fromStageId: string, toStageId: string, latencyMs: number, bytes: number): void {
  const edge = `${fromStageId}->${toStageId}`;
  engineMetrics.edgeChunkLatencySeconds.observe({ edge }, latencyMs / 1000);
  engineMetrics.edgeChunkBytes.observe({ edge }, bytes);
}

export function countClientError(code: string): void {
  serverMetrics.errorsTotal.inc({ code });
}
