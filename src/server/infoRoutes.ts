/**
 * Read-only routes: GET /v1/models, /health (503 while any stage replica is not ready), /v1/stages (the graph,
 * without file-system paths), /metrics (Prometheus text, or OpenMetrics with exemplars when asked for), and the
 * playground page with its scripts.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { StageGraph, StageSpec } from '../common/graph.ts';
import type { Engine, StageHealth } from '../common/engine.ts';
import { metricsExposition } from './metrics/metricsExposition.ts';
import type { Registry } from 'prom-client';
import { recoveryMs } from './admission/retryAfter.ts';
import { servedModelNames } from './servedModels.ts';
import { playgroundDir, playgroundScripts } from './playgroundFiles.ts';

/** The page is same-origin only: scripts and connections to this server, nothing else. */
const playgroundCsp = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self' ws: wss:",
  "img-src 'self' data:",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

function healthBody(health: readonly StageHealth[]) {
  const ready = health.length > 0 && health.every((h) => h.status === 'ready');
  return {
    ready,
    status: ready ? 'ok' : 'unavailable',
    stages: health.map((h) => ({
      stage_id: h.stageId,
      replica: h.replica,
      status: h.status,
      pid: h.pid,
      restarts: h.restarts,
      in_flight: h.inFlight,
      ...(h.instance !== undefined ? { instance: h.instance } : {}),
      ...(h.host !== undefined ? { placement: 'remote', host: h.host } : {}),
      ...(h.lastHeartbeatMs !== undefined ? { last_heartbeat: new Date(h.lastHeartbeatMs).toISOString() } : {}),
    })),
  };
}

/**
 * A stage's model without its file-system path; an autoregressive stage's positions (the context it can hold), so a
 * client can show how full a conversation is (the playground's context fill). A file model's are not known here.
 */
function describeModel(m: StageSpec['model']) {
  if (m.source !== 'generated') return { source: 'file' };
  const positions = m.kind === 'thinker' || m.kind === 'talker' ? { max_positions: m.size.maxPositions } : {};
  return { source: 'generated', preset: m.preset, ...positions };
}

export function describeGraph(graph: StageGraph) {
  return {
    async_chunk: graph.asyncChunk,
    scheduling: graph.scheduling,
    routing: graph.routing,
    entry_stage_id: graph.entryStageId,
    // The YAML's `asr:`: a Thinker without an audio encoder hears speech as its transcript (docs/voice.md).
    speech_to_text: (graph.asr ?? null) !== null,
    chunk_policy: {
      initial_codec_chunk_frames: graph.chunkPolicy.initialCodecChunkFrames,
      codec_chunk_frames: graph.chunkPolicy.codecChunkFrames,
      codec_left_context_frames: graph.chunkPolicy.codecLeftContextFrames,
      dynamic_initial_chunk: graph.chunkPolicy.dynamicInitialChunk,
      ttfp_target_ms: graph.chunkPolicy.ttfpTargetMs,
      first_packet_hold: graph.chunkPolicy.firstPacketHold,
      first_audio_first: graph.chunkPolicy.firstAudioFirst,
      speech_lead_ms: graph.chunkPolicy.speechLeadMs,
      speech_lead_min_answers: graph.chunkPolicy.speechLeadMinAnswers,
      first_prefill_split: graph.chunkPolicy.firstPrefillSplit,
    },
    stages: graph.stages.map((s) => ({
      stage_id: s.stageId,
      kind: s.kind,
      // What an encoder stage takes in (audio, image): the playground offers the microphone and image attach by it.
      ...(s.encoder ? { modality: s.encoder.modality } : {}),
      worker_type: s.workerType,
      replicas: s.replicas,
      placement: s.placement,
      ...(s.placement === 'remote' || s.minReplicas > 0 ? { min_replicas: s.minReplicas } : {}),
      final_output: s.finalOutput,
      final_output_type: s.finalOutputType,
      inputs: s.inputs.map((i) => ({ from: i.from, connector: i.connector })),
      model: describeModel(s.model),
    })),
    edges: graph.stages.flatMap((s) =>
      s.inputs.map((i) => ({
        from: i.from,
        to: s.stageId,
        connector: i.connector,
        kind: graph.connectors[i.connector]?.kind ?? null,
      })),
    ),
  };
}

/** `stageRegistry`: the server's own metrics of its engine's stage instances (stageMetrics.ts), served in /metrics. */
export function registerInfoRoutes(
  app: FastifyInstance,
  engine: Engine,
  modelName: string,
  stageRegistry: Registry,
): void {
  const created = Math.floor(Date.now() / 1000);
  const page = readFileSync(new URL('index.html', playgroundDir), 'utf8');

  app.get('/', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', playgroundCsp)
      .header('cache-control', 'no-cache')
      .send(page),
  );
  // The page's ES modules (index.html loads main.js, which imports the rest), each read once at start-up.
  for (const [urlPath, name] of playgroundScripts()) {
    const script = readFileSync(new URL(name, playgroundDir), 'utf8');
    app.get(urlPath, async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'no-cache').send(script),
    );
  }

  // The id, then the config's model_aliases (the graph's of the moment: a hot reload changes them).
  app.get('/v1/models', async () => ({
    object: 'list',
    data: servedModelNames(modelName, engine.graph).map((id) => ({ id, object: 'model', created, owned_by: 'chorus' })),
  }));

  app.get('/health', async (_request, reply) => {
    const health = engine.health();
    const body = healthBody(health);
    // A stage restarting: when to look again, from how long its last start took.
    const backInMs = body.ready ? null : recoveryMs(health);
    if (backInMs !== null) reply.header('retry-after', String(Math.max(1, Math.ceil(backInMs / 1000))));
    return reply.code(body.ready ? 200 : 503).send(body);
  });

  app.get('/v1/stages', async () => ({ ...describeGraph(engine.graph), health: healthBody(engine.health()).stages }));

  app.get('/metrics', async (request, reply) => {
    const { contentType, body } = await metricsExposition(request.headers.accept, [stageRegistry]);
    // The body depends on Accept: a cache between scraper and server must not hand one format to the other.
    return reply.type(contentType).header('vary', 'accept').send(body);
  });
}
