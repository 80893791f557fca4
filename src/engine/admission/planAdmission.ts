/**
 * The admission of one request, planned without acting: from the request, its prepared prompt, the graph, the
 * router's choice of instances (read-only views of the pool) and the EC store's answers, which stages run it, on
 * which instances, the `add` each gets, the media to send, the first-packet hold and what main expects back.
 * Pure (no clock, no I/O, nothing kept): the Orchestrator commits the plan (src/engine/Orchestrator.ts).
 *
 * Routing stays a collaborator whose choice is an input: it keeps queues and measured rates across requests
 * (src/engine/routing/Router.ts), so choosing is not pure; its policy half, chooseRoute(), is. Routing sees every
 * media item (routedStages), since an EC hit costs a Thinker choice nothing; the stages the request runs are then
 * those of the items the chosen Thinker still needs encoded (the store's hits need no encoder).
 */
import type { GenerateRequest } from '../../common/engine.ts';
import type { StageGraph, StageSpec } from '../../common/graph.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import { firstPacketHoldTokens } from '../../sched/chunkPolicy.ts';
import type { ExpectOptions } from '../../../transport/registry.ts';
import type { AddRequest, EcDrop, EcItemPlan } from '../../worker/messages.ts';
import { modalitiesToEncode } from '../ec/ecPlan.ts';
import { planMedia, type MediaRouting } from '../MediaRoutes.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import { stagesFor } from '../planEdges.ts';
import { playbackPlan } from '../playbackPlan.ts';
import type { InstanceView } from '../pool/StageInstance.ts';
import { addsAfterFirstOutput, stageAdds, upstreamSources } from '../stageAdds.ts';

export interface AdmissionInput {
  readonly requestId: string;
  readonly request: GenerateRequest;
  readonly graph: StageGraph;
  readonly prompt: PreparedPrompt;
  /** The router's instance for each of routedStages(). */
  readonly routed: ReadonlyMap<string, InstanceView>;
  /** The EC store's plan of the items on the chosen Thinker (undefined: no store, or no media). */
  readonly ec: ReadonlyMap<number, EcItemPlan> | undefined;
  /** Items not to encode: the chosen Thinker's prefix cache holds their positions (heldItems.ts). */
  readonly held?: ReadonlySet<number>;
  /** Copies the chosen Thinker must forget (the store's, handed to its next add). */
  readonly ecDrop: readonly EcDrop[];
  /** Live requests that are load (paused ones are not), this one included. */
  readonly liveRequests: number;
  /** Of them, those still before their first audio, this one included (planHold). */
  readonly beforeFirstAudio: number;
  /** The pool's READY facts: the vocoder's audio (null without one), the Talker's frames per token. */
  readonly audio: AudioOutputFacts | null;
  readonly framesPerToken: number | null;
  readonly admittedAtMs: number;
  /** A migrated request's replay (requests/migration.ts): it never holds for a first audio its client may have. */
  readonly replay?: boolean;
}

/** One stage whose output goes to the client: main expects its chunks from that instance. */
export interface PlannedOutput {
  readonly stageId: string;
  readonly type: 'text' | 'audio';
  readonly expect: ExpectOptions;
}

/**
 * The first-packet hold (src/sched/chunkPolicy.ts firstPacketHoldTokens): the tokens the Thinker writes before it
 * waits for the first audio (absent: no hold), and whether this admission ends every hold (load arrived: a held
 * Thinker would resume behind the newcomers' prefills while its listener has only the first chunk to play).
 */
export interface PlannedHold {
  readonly tokens?: number;
  readonly endsOtherHolds: boolean;
}

export interface AdmissionPlan {
  readonly requestId: string;
  /** The request's stages in graph order, and the instance of each. */
  readonly stages: readonly StageSpec[];
  readonly instances: ReadonlyMap<string, string>;
  readonly outputs: readonly PlannedOutput[];
  /**
   * Each instance's add, in graph order: producers first (stageAdds.ts says why a consumer cannot miss a chunk).
   * `afterFirstOutput`: sent when the request's first output reaches main, not at admission (addsAfterFirstOutput).
   */
  readonly adds: readonly { readonly instance: string; readonly add: AddRequest; readonly afterFirstOutput: boolean }[];
  readonly media: MediaRouting | null;
  readonly hold: PlannedHold;
}

/** The stages routing chooses instances for: those of every media item, hits in the store or not. */
export function routedStages(graph: StageGraph, request: GenerateRequest, prompt: PreparedPrompt): StageSpec[] {
  return stagesFor(graph, request.modalities, [...new Set(prompt.items.map((i) => i.modality))]);
}

export function planAdmission(a: AdmissionInput): AdmissionPlan {
  const { graph, request, prompt } = a;
  const stages = stagesFor(graph, request.modalities, modalitiesToEncode(prompt, a.ec, a.held));
  const chosen = new Map(stages.map((s) => [s.stageId, a.routed.get(s.stageId)!]));
  const outputs = stages.filter(
    (s) => s.finalOutput && s.finalOutputType && request.modalities.includes(s.finalOutputType),
  );
  const firstChunkDeadline = firstChunkDeadlineOf(a);
  const upstreamOf = upstreamSources(graph, chosen, a.admittedAtMs);
  const media = planMedia(prompt, upstreamOf(graph.entryStageId), upstreamOf, a.ec, a.held);
  const holdLoad = firstOutputsFirst(graph) ? a.beforeFirstAudio : a.liveRequests;
  const hold = a.replay ? { endsOtherHolds: false } : planHold(graph, request, holdLoad, a.framesPerToken);
  const adds = stageAdds({
    requestId: a.requestId,
    request,
    graph,
    stages,
    outputs,
    chosen,
    promptTokenIds: prompt.promptTokenIds,
    ...(prompt.cacheSalt !== undefined ? { cacheSalt: prompt.cacheSalt } : {}),
    media: media?.plan ?? null,
    ecDrop: a.ecDrop,
    upstreamOf,
    liveRequests: a.liveRequests,
    firstPacketTokens: hold.tokens,
    firstChunkDeadline,
    admittedAtMs: a.admittedAtMs,
    playback: playbackPlan(request, graph, a.audio, a.admittedAtMs, chosen.values()),
  });
  const later = addsAfterFirstOutput(graph, stages, outputs);
  return {
    requestId: a.requestId,
    stages,
    instances: new Map([...chosen].map(([stageId, view]) => [stageId, view.instance])),
    outputs: outputs.map((s) => ({
      stageId: s.stageId,
      type: s.finalOutputType!,
      expect: {
        fromInstance: chosen.get(s.stageId)!.instance,
        fromStageId: s.stageId,
        keyStage: s.stageId,
        firstChunkDeadline,
        chunkTimeoutMs: graph.chunkPolicy.chunkTimeoutMs,
      },
    })),
    adds: adds.map(({ slot, add }) => ({
      instance: slot.instance,
      add,
      afterFirstOutput: later.has(slot.spec.stageId),
    })),
    media,
    hold,
  };
}

/** With media, the Thinker's first output may wait for the slowest encoder's timeout first. */
function firstChunkDeadlineOf(a: AdmissionInput): number {
  // A reduce, not a spread: a body of tiny images can hold more items than a call has room for arguments.
  const encoderTimeoutMs = a.prompt.items.reduce((most, i) => Math.max(most, i.encoder.encoder!.timeoutMs), 0);
  return a.admittedAtMs + encoderTimeoutMs + a.graph.chunkPolicy.chunkTimeoutMs;
}

/**
 * Whether the autoregressive stages run first outputs in steps of their own (`prefill_first`, on by default;
 * ArScheduler): then a newcomer's first audio shares their steps only with the requests still before theirs.
 */
function firstOutputsFirst(graph: StageGraph): boolean {
  return graph.stages.every((s) => s.engine.prefillFirst !== false); // set on autoregressive stages only
}

/**
 * The request's first-packet hold at this load (liveRequests: this one included). With first outputs first the load
 * is the requests still before their first audio: beside sixteen long answers already speaking, a newcomer's
 * Thinker, unheld, wrote a token every 2-3 ms after its first and woke main with each text delta while the Talker,
 * on the same two cores, waited 43 ms for one to finish a step (its CPU 8 ms of 51; bench/NOTES.md, "The newcomer's
 * Thinker ran ahead of its Talker").
 */
export function planHold(
  graph: StageGraph,
  request: GenerateRequest,
  liveRequests: number,
  framesPerToken: number | null,
): PlannedHold {
  // With async_chunk off the Talker gets its rows when the Thinker ends: a hold would wait forever.
  if (!graph.asyncChunk || framesPerToken === null) return { endsOtherHolds: false };
  const ic = request.initialCodecChunkFrames;
  const tokens = firstPacketHoldTokens(graph.chunkPolicy, liveRequests, framesPerToken, ic);
  if (tokens === undefined) return { endsOtherHolds: true };
  // A request without audio out has nothing to hold for.
  return request.modalities.includes('audio') ? { tokens, endsOtherHolds: false } : { endsOtherHolds: false };
}
