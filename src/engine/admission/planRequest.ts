/**
 * The plan step of admitting a request: routing chooses the instances (a retained prompt prefix may pin the Thinker)
 * and returns how to book its choice (its ticket, kept once the adds are sent), the EC store says which media items
 * it holds for the chosen Thinker, and the pure planAdmission turns their answers into the stages, adds, media sends
 * and hold of the request. Nothing is sent.
 */
import type { GenerateRequest } from '../../common/engine.ts';
import type { StageGraph, StageSpec } from '../../common/graph.ts';
import type { AudioOutputFacts } from '../../common/modelFacts.ts';
import type { EcStore } from '../ec/EcStore.ts';
import { planEcItems } from '../ec/ecPlan.ts';
import type { PreparedPrompt } from '../mediaPrompt.ts';
import type { PrefixRoutes } from '../PrefixRoutes.ts';
import type { RouteBooking, Router } from '../routing/Router.ts';
import { planAdmission, routedStages, type AdmissionPlan } from './planAdmission.ts';

/** What the plan reads of the engine now. */
export interface PlanContext {
  readonly graph: StageGraph;
  readonly router: Router;
  readonly prefixRoutes: PrefixRoutes;
  readonly ec: EcStore | null;
  /** Live requests that are load, this one included. */
  readonly liveRequests: number;
  /** Of them, those still before their first audio, this one included (the first-packet hold's load). */
  readonly beforeFirstAudio: number;
  readonly audio: AudioOutputFacts | null;
  readonly framesPerToken: number | null;
}

export interface RequestToPlan {
  /** The run's id: the request's, or a migrated request's replay run. */
  readonly requestId: string;
  readonly request: GenerateRequest;
  readonly prompt: PreparedPrompt;
  readonly replay?: boolean;
  /** Whose the EC store's pins on the entries it uses are (a replay's: its request's, released with it). */
  readonly ecOwner?: string;
  /** Items whose Thinker holds their KV go to no encoder (heldItems.ts); false once such a skip proved wrong. */
  readonly skipHeld?: boolean;
}

export function planRequest(
  ctx: PlanContext,
  { requestId, request, prompt, replay = false, ecOwner = requestId, skipHeld = true }: RequestToPlan,
): { plan: AdmissionPlan; book: RouteBooking } {
  const { graph, router, ec } = ctx;
  const entryStageId = graph.entryStageId;
  const key = (s: StageSpec) => (s.stageId === entryStageId ? request.prefix?.key : undefined);
  const stages = routedStages(graph, request, prompt);
  const routing = router.route(
    requestId,
    entryStageId,
    stages,
    prompt,
    (s, pick) => ctx.prefixRoutes.pick(s, key(s), pick),
    request.modalities.includes('audio'),
    skipHeld,
  );
  const { chosen: routed, book, held } = routing;
  const thinker = routed.get(entryStageId)!.instance;
  const plan = planAdmission({
    requestId,
    request,
    graph,
    prompt,
    routed,
    ec: planEcItems(ec, ecOwner, prompt, thinker, held),
    held,
    ecDrop: ec?.takeDrops(thinker) ?? [],
    liveRequests: ctx.liveRequests,
    beforeFirstAudio: ctx.beforeFirstAudio,
    audio: ctx.audio,
    framesPerToken: ctx.framesPerToken,
    admittedAtMs: Date.now(),
    replay,
  });
  return { plan, book };
}
