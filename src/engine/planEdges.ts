/**
 * The edge table of a graph: one edge per (upstream replica, downstream replica) pair of every stage input, one per
 * final-output replica to main, and one from main to each encoder replica (main sends it the media items). Each edge
 * has exactly one producer and one consumer process (SPSC rings). Stages that instances may join add "stage#*"
 * edges (joinEdges).
 */
import { modalitiesServed } from '../media/modalities/index.ts';
import { MAIN, type StageGraph, type StageSpec } from '../common/graph.ts';
import type { MediaModality } from '../common/encoderSettings.ts';
import type { EdgeBinding } from '../worker/messages.ts';
import { encoderConnector, outputConnector } from '../common/edgeConnectors.ts';

export { encoderConnector };

export function instanceId(stageId: string, replica: number): string {
  return `${stageId}#${replica}`;
}

export function planEdges(graph: StageGraph): EdgeBinding[] {
  const byId = new Map(graph.stages.map((s) => [s.stageId, s]));
  const edges: EdgeBinding[] = [];
  for (const stage of graph.stages) {
    for (const input of stage.inputs) {
      const from = byId.get(input.from)!;
      for (let i = 0; i < from.replicas; i++) {
        for (let j = 0; j < stage.replicas; j++) {
          edges.push({
            from: instanceId(from.stageId, i),
            to: instanceId(stage.stageId, j),
            connector: input.connector,
          });
        }
      }
    }
    if (stage.finalOutput) {
      for (let i = 0; i < stage.replicas; i++)
        edges.push({ from: instanceId(stage.stageId, i), to: MAIN, connector: outputConnector(graph, stage) });
    }
    if (stage.encoder) {
      for (let i = 0; i < stage.replicas; i++)
        edges.push({ from: MAIN, to: instanceId(stage.stageId, i), connector: encoderConnector(graph, stage) });
    }
    if (stage.joinable) edges.push(...joinEdges(graph, stage));
  }
  return edges;
}

/**
 * The edges of instances that join a stage later (`chorus stage`): "stage#*" ends, on the stage's redis connectors
 * (nothing to provision, so one edge covers every instance that will ever join).
 */
function joinEdges(graph: StageGraph, stage: StageSpec): EdgeBinding[] {
  const any = `${stage.stageId}#*`;
  const edges: EdgeBinding[] = stage.inputs.map((i) => ({ from: `${i.from}#*`, to: any, connector: i.connector }));
  for (const d of graph.stages)
    for (const i of d.inputs)
      if (i.from === stage.stageId && !d.joinable)
        edges.push({ from: any, to: `${d.stageId}#*`, connector: i.connector });
  if (stage.finalOutput) edges.push({ from: any, to: MAIN, connector: outputConnector(graph, stage) });
  if (stage.encoder) edges.push({ from: MAIN, to: any, connector: encoderConnector(graph, stage) });
  return edges;
}

/**
 * The stages a request needs: every final-output stage whose output type was requested, and their ancestors, except
 * encoders of a modality the request has no media of. Text only -> the Thinker alone; text + audio -> the whole chain.
 */
export function stagesFor(
  graph: StageGraph,
  modalities: readonly string[],
  media: readonly MediaModality[] = [],
): StageSpec[] {
  const byId = new Map(graph.stages.map((s) => [s.stageId, s]));
  const needed = new Set<string>();
  const visit = (id: string) => {
    const spec = byId.get(id)!;
    // An encoder runs when it serves one of the request's modalities (an image encoder may serve video too).
    if (needed.has(id) || (spec.encoder && !modalitiesServed(spec.encoder).some((m) => media.includes(m)))) return;
    needed.add(id);
    for (const input of spec.inputs) visit(input.from);
  };
  for (const s of graph.stages)
    if (s.finalOutput && s.finalOutputType && modalities.includes(s.finalOutputType)) visit(s.stageId);
  return graph.stages.filter((s) => needed.has(s.stageId)); // keeps topological order
}
