/**
 * Which connector carries each edge of a stage: the rule the engine plans edges by (src/engine/planEdges.ts) and
 * the config checks placement against (a remote stage's edges must all be on a connector that crosses hosts).
 */
import type { StageGraph, StageSpec } from './graph.ts';

type GraphEdges = Pick<StageGraph, 'stages' | 'connectors'>;

/** Media goes to an encoder over the connector its rows leave on (the consuming Thinker's input). */
export function encoderConnector(graph: GraphEdges, encoder: StageSpec): string {
  for (const s of graph.stages) {
    const input = s.inputs.find((i) => i.from === encoder.stageId);
    if (input) return input.connector;
  }
  return Object.keys(graph.connectors)[0];
}

/** Outputs to main use the connector of the stage's first input, or the first connector for the entry stage. */
export function outputConnector(graph: GraphEdges, stage: StageSpec): string {
  return stage.inputs[0]?.connector ?? Object.keys(graph.connectors)[0];
}

/** Every edge touching `stage`, with the connector that carries it (for messages: what the edge is). */
export function edgesTouching(graph: GraphEdges, stage: StageSpec): { what: string; connector: string }[] {
  const out = stage.inputs.map((i) => ({ what: `its input from ${i.from}`, connector: i.connector }));
  for (const s of graph.stages)
    for (const i of s.inputs)
      if (i.from === stage.stageId) out.push({ what: `its output to ${s.stageId}`, connector: i.connector });
  if (stage.finalOutput) out.push({ what: 'its final output to main', connector: outputConnector(graph, stage) });
  if (stage.encoder) out.push({ what: 'the media main sends it', connector: encoderConnector(graph, stage) });
  return out;
}
