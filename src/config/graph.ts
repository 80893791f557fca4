/**
 * The shape of the stage graph: unique ids, inputs that name real stages and connectors, no cycles,
 * exactly one entry stage, and a topological order that the engine starts stages in.
 *
 * Encoder stages are sources too, but not entries: they receive media items from main, never a prompt, so
 * they have no inputs and do not count as entry stages. Without encoders the entry stage comes first.
 */
import { suggest, type Problems } from './problems.ts';
import type { StageInput, StageKind } from '../common/graph.ts';
import { stageKinds } from '../../stages/registry.ts';

export interface GraphNode {
  readonly index: number; // position in the YAML `stages` list (for error paths)
  readonly stageId: string;
  readonly kind: StageKind;
  readonly inputs: readonly { readonly from: string; readonly connector?: string }[];
}

export interface GraphShape {
  /** Indices into the YAML list, topologically ordered; ties keep file order. */
  readonly order: readonly number[];
  /** Resolved inputs per YAML index (the connector filled in). */
  readonly inputs: readonly (readonly StageInput[])[];
  /** stageId -> the YAML indices of the stages that read from it. */
  readonly consumers: ReadonlyMap<string, readonly number[]>;
  /** YAML index of the entry stage (the one requests enter). */
  readonly entry: number;
}

/** Returns null when the graph is too broken to order (the problems say why). */
export function resolveGraph(
  nodes: readonly GraphNode[],
  connectorNames: readonly string[],
  problems: Problems,
): GraphShape | null {
  const before = problems.count;
  const byId = new Map<string, GraphNode>();
  for (const node of nodes) {
    const first = byId.get(node.stageId);
    if (first)
      problems.add(
        ['stages', node.index, 'stage_id'],
        `duplicate stage id "${node.stageId}" (also stages[${first.index}])`,
      );
    else byId.set(node.stageId, node);
  }
  const ids = [...byId.keys()];

  const duplicates = problems.count > before;
  const inputs = nodes.map((node) => resolveInputs(node, byId, ids, connectorNames, problems));
  const consumers = new Map<string, number[]>();
  nodes.forEach((node, i) => {
    for (const input of inputs[i]) consumers.set(input.from, [...(consumers.get(input.from) ?? []), node.index]);
  });

  for (const node of nodes) {
    if (readsRequest(node.kind) && node.inputs.length > 0) {
      problems.add(
        ['stages', node.index, 'inputs'],
        `encoder stage "${node.stageId}" reads its media from the request, not from another stage: remove its ` +
          `inputs (list it in the thinker's inputs instead)`,
      );
    }
  }
  // The entry reads from nothing but encoders (the Thinker of a multimodal graph has encoder inputs).
  const entries = nodes.filter(
    (n) => !readsRequest(n.kind) && n.inputs.every((i) => readsRequest(byId.get(i.from)?.kind)),
  );
  if (entries.length > 1) {
    const names = entries.map((n) => `"${n.stageId}" (stages[${n.index}])`).join(', ');
    for (const extra of entries.slice(1)) {
      problems.add(
        ['stages', extra.index],
        `${entries.length} entry stages (stages with no inputs but encoders): ${names}; exactly one stage may read ` +
          `from nothing but encoders — give the others \`inputs: [{from: ...}]\``,
      );
    }
  }
  // Unknown or duplicate stage ids make the order meaningless; a bad connector or a second entry does not,
  // so the per-stage checks still run and the user sees those problems in the same pass.
  const danglingInput = nodes.some((n) => n.inputs.some((i) => i.from === n.stageId || !byId.has(i.from)));
  if (duplicates || danglingInput) return null;

  const order = topologicalOrder(nodes, byId, problems);
  if (!order) return null;
  if (entries.length === 0) {
    problems.add(
      ['stages'],
      'no entry stage: every stage other than the encoders has inputs, so no stage can receive a request (the ' +
        'thinker must have no inputs or only encoder inputs)',
    );
    return null;
  }
  return { order, inputs, consumers, entry: entries[0].index };
}

function resolveInputs(
  node: GraphNode,
  byId: ReadonlyMap<string, GraphNode>,
  ids: readonly string[],
  connectorNames: readonly string[],
  problems: Problems,
): StageInput[] {
  const resolved: StageInput[] = [];
  node.inputs.forEach((input, j) => {
    const path = ['stages', node.index, 'inputs', j];
    if (input.from === node.stageId) {
      problems.add([...path, 'from'], `stage "${node.stageId}" cannot read from itself`);
    } else if (!byId.has(input.from)) {
      problems.add(
        [...path, 'from'],
        `unknown stage "${input.from}"${suggest(input.from, ids)} (stages: ${ids.join(', ')})`,
      );
    } else if (resolved.some((r) => r.from === input.from)) {
      problems.add([...path, 'from'], `stage "${input.from}" is listed twice in inputs`);
    }
    let connector = input.connector;
    if (connector === undefined) {
      // One connector means one obvious choice; with several, guessing would hide a mistake.
      if (connectorNames.length === 1) connector = connectorNames[0];
      else problems.add(path, `connector required: several connectors are defined (${connectorNames.join(', ')})`);
    } else if (!connectorNames.includes(connector)) {
      problems.add(
        [...path, 'connector'],
        `unknown connector "${connector}"${suggest(connector, connectorNames)} (connectors: ` +
          `${connectorNames.join(', ')})`,
      );
    }
    // Kept even without a connector (a problem is recorded and parsing will fail), so the checks that
    // follow still see the edge and report their own problems instead of misleading ones.
    resolved.push({ from: input.from, connector: connector ?? '' });
  });
  return resolved;
}

/** Kahn's algorithm in file order; on a cycle, names it (a -> b -> a) at the input that closes it. */
function topologicalOrder(
  nodes: readonly GraphNode[],
  byId: ReadonlyMap<string, GraphNode>,
  problems: Problems,
): number[] | null {
  const pending = new Map(nodes.map((n) => [n.stageId, new Set(n.inputs.map((i) => i.from))]));
  const order: number[] = [];
  while (pending.size > 0) {
    const ready = nodes.filter((n) => pending.get(n.stageId)?.size === 0);
    if (ready.length === 0) break;
    for (const node of ready) {
      order.push(node.index);
      pending.delete(node.stageId);
      for (const deps of pending.values()) deps.delete(node.stageId);
    }
  }
  if (pending.size === 0) return order;

  // Every stage left has an unresolved input; walking inputs from any of them must revisit a stage.
  const path: string[] = [];
  let current = nodes.find((n) => pending.has(n.stageId))!.stageId;
  while (!path.includes(current)) {
    path.push(current);
    current = [...pending.get(current)!].find((from) => pending.has(from))!;
  }
  // path walks from consumers to producers; reversed, it is the cycle in data-flow order.
  const cycle = path.slice(path.indexOf(current)).reverse();
  // Blame the edge that reads from a stage further down the file: that is the one that looks backwards.
  const edges = cycle.map((from, k) => ({ from: byId.get(from)!, to: byId.get(cycle[(k + 1) % cycle.length])! }));
  const blamed = edges.find((e) => e.from.index > e.to.index) ?? edges[0];
  const start = cycle.indexOf(blamed.to.stageId);
  const named = [...cycle.slice(start), ...cycle.slice(0, start), blamed.to.stageId];
  const inputIndex = blamed.to.inputs.findIndex((i) => i.from === blamed.from.stageId);
  problems.add(
    ['stages', blamed.to.index, 'inputs', inputIndex, 'from'],
    `the stages form a cycle: ${named.join(' -> ')}`,
  );
  return null;
}

/** Encoders read their input from the request (main), never from another stage. */
function readsRequest(kind: StageKind | undefined): boolean {
  return kind !== undefined && stageKinds[kind].readsRequest;
}
