/**
 * What main tells each chosen stage instance when it admits a request: its `add` message (prompt for the entry
 * stage, sampling, downstream targets and upstream sources with their deadlines, the media plan, the playback
 * plan), built from the admission's choices. Pure: the Orchestrator sends them.
 */
import type { StageGraph, StageSpec } from '../common/graph.ts';
import type { GenerateRequest } from '../common/engine.ts';
import { stageKinds } from '../kinds/registry.ts';
import type { AddRequest, DownstreamTarget, EcDrop, PlaybackPlan, UpstreamSource } from '../worker/messages.ts';
import type { RequestMediaPlan } from './MediaRoutes.ts';
import { MAIN } from './planEdges.ts';
import { statefulVocoder, type InstanceView } from './pool/StageInstance.ts';

export interface Admission {
  readonly requestId: string;
  readonly request: GenerateRequest;
  readonly graph: StageGraph;
  /** The request's stages, in graph order, and those whose output goes to the client. */
  readonly stages: readonly StageSpec[];
  readonly outputs: readonly StageSpec[];
  readonly chosen: ReadonlyMap<string, InstanceView>;
  readonly promptTokenIds: readonly number[];
  readonly media: RequestMediaPlan | null;
  readonly ecDrop: readonly EcDrop[];
  readonly upstreamOf: (stageId: string) => UpstreamSource;
  readonly liveRequests: number;
  /** The first-packet hold (chunkPolicy.ts firstPacketHoldTokens), undefined for none. */
  readonly firstPacketTokens?: number;
  readonly firstChunkDeadline: number;
  readonly playback: PlaybackPlan | undefined;
}

/**
 * The chosen instance of a stage as an upstream source; an encoder's rows are due within its timeout of admission
 * (its own chunks, one per item, too).
 */
export function upstreamSources(
  graph: StageGraph,
  chosen: ReadonlyMap<string, InstanceView>,
  admittedAtMs: number,
): (stageId: string) => UpstreamSource {
  return (stageId) => {
    const timeoutMs = graph.stages.find((s) => s.stageId === stageId)?.encoder?.timeoutMs;
    const deadlines =
      timeoutMs === undefined
        ? {}
        : {
            firstChunkDeadline: admittedAtMs + timeoutMs,
            chunkTimeoutMs: timeoutMs,
            timeoutSetting: `the encoder's timeout_ms (stage ${stageId})`,
          };
    return { instance: chosen.get(stageId)!.instance, stageId, ...deadlines };
  };
}

/**
 * Each stage's instance and `add`, downstream stages first, so each is expecting chunks before its upstream can
 * produce any (the Thinker before its encoders).
 */
export function stageAdds(a: Admission): { slot: InstanceView; add: AddRequest }[] {
  const { request, graph, stages, chosen, media } = a;
  const stateful = statefulVocoder(chosen.values());
  return [...stages].reverse().map((spec) => {
    const slot = chosen.get(spec.stageId)!;
    const downstream: DownstreamTarget[] = stages
      .filter((d) => d.inputs.some((i) => i.from === spec.stageId))
      .map((d) => ({ instance: chosen.get(d.stageId)!.instance, stageId: d.stageId }));
    if (a.outputs.includes(spec)) downstream.push({ instance: MAIN, stageId: MAIN });
    const isEntry = spec.stageId === graph.entryStageId;
    const upstreams: UpstreamSource[] = spec.encoder
      ? [{ instance: MAIN, stageId: MAIN }]
      : spec.inputs.filter((i) => chosen.has(i.from)).map((i) => a.upstreamOf(i.from));
    const add: AddRequest = {
      type: 'add',
      requestId: a.requestId,
      promptTokenIds: isEntry ? a.promptTokenIds : undefined,
      sampling: { ...spec.defaultSamplingParams, ...request[stageKinds[spec.kind].requestSampling] },
      downstream,
      upstreams,
      ...(isEntry && media ? { media: media.thinker } : {}),
      ...(isEntry && request.prefix ? { prefix: request.prefix } : {}),
      ...(isEntry && a.ecDrop.length > 0 ? { ecDrop: a.ecDrop } : {}),
      ...(spec.encoder && media ? { encode: media.encode.get(slot.instance) ?? [] } : {}),
      initialCodecChunkFrames: request.initialCodecChunkFrames,
      ...(a.firstPacketTokens !== undefined ? { firstPacketTokens: a.firstPacketTokens } : {}),
      ...(stateful ? { codecLeftContextFrames: 0 } : {}),
      liveRequests: a.liveRequests,
      firstChunkDeadline: a.firstChunkDeadline,
      ...(a.playback ? { playback: a.playback } : {}),
    };
    return { slot, add };
  });
}
