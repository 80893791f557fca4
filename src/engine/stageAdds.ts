/**
 * What main tells each chosen stage instance when it admits a request: its `add` message (sampling, downstream
 * targets and upstream sources with their deadlines, and the kind's own arguments, which its descriptor builds),
 * from the admission's choices. Pure: the Orchestrator sends them.
 */
import { MAIN, type StageGraph, type StageSpec } from '../common/graph.ts';
import type { GenerateRequest } from '../common/engine.ts';
import { stageKinds } from '../../stages/registry.ts';
import type { AddRequest, DownstreamTarget, EcDrop, PlaybackPlan, UpstreamSource } from '../worker/messages.ts';
import type { RequestMediaPlan } from './MediaRoutes.ts';
import type { InstanceView } from './pool/StageInstance.ts';

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
  /** When main admitted the request (epoch ms): every add carries it (AddRequest.admittedAtMs). */
  readonly admittedAtMs: number;
  readonly playback: PlaybackPlan | undefined;
  /** The request's cache partition (PreparedPrompt.cacheSalt); every stage gets it. */
  readonly cacheSalt?: string;
}

/**
 * The chosen instance of a stage as an upstream source; an encoder's rows are due within its timeout of admission
 * (its own chunks, one per item, too). Any other stage's chunks are due within chunk_timeout_ms, renewed while its
 * process (on this host: its pid) runs.
 */
export function upstreamSources(
  graph: StageGraph,
  chosen: ReadonlyMap<string, InstanceView>,
  admittedAtMs: number,
): (stageId: string) => UpstreamSource {
  return (stageId) => {
    const timeoutMs = graph.stages.find((s) => s.stageId === stageId)?.encoder?.timeoutMs;
    const view = chosen.get(stageId)!;
    const pid = view.remote ? null : (view.worker?.pid ?? null);
    const deadlines =
      timeoutMs === undefined
        ? pid === null
          ? {}
          : { pid }
        : {
            firstChunkDeadline: admittedAtMs + timeoutMs,
            chunkTimeoutMs: timeoutMs,
            timeoutSetting: `the encoder's timeout_ms (stage ${stageId})`,
          };
    return { instance: view.instance, stageId, ...deadlines };
  };
}

/**
 * The stages whose add waits for the request's first output at main (issue 46): those whose every input comes from a
 * stage that main does not feed itself, nor the entry stage (Code2Wav, fed by the Talker), when main expects an output
 * of the entry stage (the Thinker's text). At admission the entry stage starts its prefill, the critical path's first
 * model run; an add woken then is a third process wanting one of two cores, and such a stage, idle until a middle
 * stage's first chunk, read it during that prefill (0.2-1.6 ms of the Thinker's core a prefill, measured). Sent when
 * the entry's first output is out (its prefill done), it is read 15 ms or more before its first input can come (a
 * middle stage's prefill lies between). A stage fed by the entry stage (the Talker) still gets its add at admission:
 * sent later, it was read as the entry's first chunk arrived, on the critical path (measured slower, bench/NOTES.md).
 */
export function addsAfterFirstOutput(
  graph: StageGraph,
  stages: readonly StageSpec[],
  outputs: readonly StageSpec[],
): ReadonlySet<string> {
  if (!outputs.some((s) => s.stageId === graph.entryStageId)) return new Set();
  const fedEarly = (from: string) =>
    from === MAIN || from === graph.entryStageId || !!graph.stages.find((s) => s.stageId === from)?.encoder;
  const waits = (s: StageSpec) =>
    s.stageId !== graph.entryStageId && s.inputs.length > 0 && !s.inputs.some((i) => fedEarly(i.from));
  return new Set(stages.filter(waits).map((s) => s.stageId));
}

/**
 * Each stage's instance and `add`, in graph order: the producers first (the encoders, then the Thinker: the entry
 * stage, which starts computing as soon as its add is read), so the first model step is not behind main writing the
 * other stages' adds and those stages waking to read them (issue 46). A downstream stage cannot miss a chunk sent
 * before its add is read: its connector keeps a frame until it is asked for (transport/KeyedMailbox.ts), and all the
 * adds are written in the same turn of main's loop, long before an upstream model step ends. The common fields are
 * main's; `args` is the kind's, built by its descriptor from the admission's kind-neutral facts
 * (StageKindDescriptor.addArgs).
 */
export function stageAdds(a: Admission): { slot: InstanceView; add: AddRequest }[] {
  const { request, stages, chosen } = a;
  const chosenFacts = [...chosen.values()].flatMap((v) => (v.worker?.settings ? [v.worker.settings.facts] : []));
  return stages.map((spec) => {
    const slot = chosen.get(spec.stageId)!;
    const downstream: DownstreamTarget[] = stages
      .filter((d) => d.inputs.some((i) => i.from === spec.stageId))
      .map((d) => ({ instance: chosen.get(d.stageId)!.instance, stageId: d.stageId }));
    if (a.outputs.includes(spec)) downstream.push({ instance: MAIN, stageId: MAIN });
    const upstreams: UpstreamSource[] = spec.encoder
      ? [{ instance: MAIN, stageId: MAIN }]
      : spec.inputs.filter((i) => chosen.has(i.from)).map((i) => a.upstreamOf(i.from));
    const kind = stageKinds[spec.kind];
    const add: AddRequest = {
      type: 'add',
      requestId: a.requestId,
      sampling: { ...spec.defaultSamplingParams, ...request[kind.requestSampling] },
      downstream,
      upstreams,
      firstChunkDeadline: a.firstChunkDeadline,
      admittedAtMs: a.admittedAtMs,
      liveRequests: a.liveRequests,
      ...(request.traceparent ? { traceparent: request.traceparent } : {}),
      ...(a.cacheSalt !== undefined ? { cacheSalt: a.cacheSalt } : {}),
      args: kind.addArgs({
        requestId: a.requestId,
        request,
        spec,
        instance: slot.instance,
        promptTokenIds: a.promptTokenIds,
        media: a.media,
        ecDrop: a.ecDrop,
        ...(a.firstPacketTokens !== undefined ? { firstPacketTokens: a.firstPacketTokens } : {}),
        ...(a.playback ? { playback: a.playback } : {}),
        chosenFacts,
      }),
    };
    return { slot, add };
  });
}
