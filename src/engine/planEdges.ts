/**
 * The edge table of a graph: one edge per (upstream replica, downstream replica) pair of every stage input, and one
 * per final-output replica to main. Each edge has exactly one producer and one consumer process (SPSC rings).
 */
import type { StageGraph, StageSpec } from '../config/types.ts';
import type { EdgeBinding } from '../worker/messages.ts';

export const MAIN = 'main';

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
          edges.push({ from: instanceId(from.stageId, i), to: instanceId(stage.stageId, j), connector: input.connector });
        }
      }
    }
    if (stage.finalOutput) {
      for (let i = 0; i < stage.replicas; i++) edges.push({ from: instanceId(stage.stageId, i), to: MAIN, connector: outputConnector(graph, stage) });
    }
  }
  return edges;
}

/** Outputs to main use the connector of the stage's first input, or the first connector for the entry stage. */
function outputConnector(graph: StageGraph, stage: StageSpec): string {
  return stage.inputs[0]?.connector ?? Object.keys(graph.connectors)[0];
}

/**
 * The stages a request needs: every final-output stage whose output type was requested, and their ancestors.
 * Text only -> the Thinker alone; text + audio -> the whole chain.
 */
export function stagesFor(graph: StageGraph, modalities: readonly string[]): StageSpec[] {
  const byId = new Map(graph.stages.map((s) => [s.stageId, s]));
  const needed = new Set<string>();
  const visit = (id: string) => {
    if (needed.has(id)) return;
    needed.add(id);
    for (const input of byId.get(id)!.inputs) visit(input.from);
  };
  for (const s of graph.stages) if (s.finalOutput && s.finalOutputType && modalities.includes(s.finalOutputType)) visit(s.stageId);
  return graph.stages.filter((s) => needed.has(s.stageId)); // keeps topological order
}
